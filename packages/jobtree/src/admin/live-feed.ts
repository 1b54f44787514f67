// Server-sent events for the live views (dashboard, `curl -N .../api/events`):
// one refresh loop per app, running only while someone listens, that sends
// the tree when it changed, the queues with running totals (watchers compute
// rates from them), and the scheduler while one runs (null once it stops);
// restarts are sent at once. Each event is serialised once for all listeners.

import type { ServerResponse } from 'node:http';

/** The event names a listener receives. */
export type LiveEventName = 'hello' | 'tree' | 'queues' | 'scheduler' | 'restart';

export interface LiveSources {
  /** A JSON object (the feed adds `now`, epoch ms, when it sends it). */
  tree(): object;
  queues(): Promise<unknown>;
  /** undefined when the app runs no scheduler (no processor yet, or none left). */
  scheduler(): unknown;
}

/** A listener whose socket holds this much unsent data is cut off instead of growing memory. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

export class LiveFeed {
  readonly #sources: LiveSources;
  readonly #refreshMs: number;
  readonly #clients = new Set<ServerResponse>();
  #timer: NodeJS.Timeout | undefined;
  #soon: NodeJS.Timeout | undefined;
  #lastTree = '';
  #lastScheduler = '';
  #ticking = false;
  #closed = false;

  constructor(sources: LiveSources, refreshMs: number) {
    this.#sources = sources;
    this.#refreshMs = refreshMs;
  }

  get listeners(): number {
    return this.#clients.size;
  }

  /** Turns a response into an event stream and sends the current state to it. */
  attach(res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(`retry: 1000\n${frame('hello', { refreshMs: this.#refreshMs })}`);
    this.#clients.add(res);
    res.on('close', () => {
      this.#clients.delete(res);
      if (this.#clients.size === 0) this.#stopLoop();
    });
    // A newcomer gets everything now, not at the next change.
    this.#lastTree = '';
    this.#lastScheduler = '';
    this.#startLoop();
    this.refreshSoon(0);
  }

  /** Sends an event to every listener now. */
  broadcast(name: LiveEventName, data: unknown): void {
    if (this.#clients.size === 0) return;
    const text = frame(name, data);
    for (const res of this.#clients) {
      if (res.writableLength > MAX_BUFFERED_BYTES) {
        res.destroy();
        continue;
      }
      res.write(text);
    }
  }

  /** Something changed (a restart): refresh within `delayMs` rather than at the next period. */
  refreshSoon(delayMs = 20): void {
    if (this.#clients.size === 0 || this.#soon !== undefined || this.#closed) return;
    this.#soon = setTimeout(() => {
      this.#soon = undefined;
      void this.#tick();
    }, delayMs);
  }

  /** Ends every stream. */
  close(): void {
    this.#closed = true;
    this.#stopLoop();
    for (const res of this.#clients) res.end();
    this.#clients.clear();
  }

  #startLoop(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(() => void this.#tick(), this.#refreshMs);
    this.#timer.unref();
  }

  #stopLoop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    if (this.#soon !== undefined) clearTimeout(this.#soon);
    this.#timer = undefined;
    this.#soon = undefined;
  }

  async #tick(): Promise<void> {
    if (this.#ticking || this.#clients.size === 0) return;
    this.#ticking = true;
    try {
      // Compared without the clock, so that an unchanged tree is not sent again.
      const tree = JSON.stringify(this.#sources.tree());
      if (tree !== this.#lastTree) {
        this.#lastTree = tree;
        this.#send('tree', `{"now":${Date.now()},${tree.slice(1)}`);
      }
      const scheduler = this.#sources.scheduler();
      // A scheduler that stops after listeners saw it is sent as null, so
      // that they drop it rather than show its last state for good.
      const text = scheduler !== undefined ? JSON.stringify(scheduler) : this.#lastScheduler === '' ? '' : 'null';
      if (text !== this.#lastScheduler) {
        this.#lastScheduler = text;
        this.#send('scheduler', text);
      }
      this.#send('queues', JSON.stringify(await this.#sources.queues()));
    } catch {
      // The app is closing or the store is busy: the next period tries again.
    } finally {
      this.#ticking = false;
    }
  }

  #send(name: LiveEventName, json: string): void {
    const text = `event: ${name}\ndata: ${json}\n\n`;
    for (const res of this.#clients) {
      if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
      else res.write(text);
    }
  }
}

function frame(name: LiveEventName, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}
