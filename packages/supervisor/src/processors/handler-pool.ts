// The handler threads: a piscina pool whose every thread runs one lane (a
// long task running many handlers, see lane-worker.ts). Jobs go to the
// least busy lane in one message per lane per batch. A lane whose thread
// dies, or that stops ticking for `stuckThreadMs`, is gone with its thread;
// its jobs are reported lost with the culprit named (the job the thread was
// executing, or the one the scheduler ended the thread for), and the next
// jobs get a new lane on a new thread.

import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import { Piscina } from 'piscina';
import type { AbortCause } from './interfaces.js';
import {
  type FromLane,
  LANE_RESULT_FIELDS,
  type LaneJob,
  type LaneTask,
  type PackedJobs,
  type SerializedError,
  type ToLane,
  packLaneJob,
} from './lane-protocol.js';
import { CURRENT, NO_JOB, TICK, createLaneStatus } from './lane-status.js';

export interface HandlerPoolEvents {
  /** A handler ended: resolved (`ok`) with its result, or rejected with its error (a SerializedError). */
  settled(serial: number, ok: boolean, valueOrError: unknown): void;
  /** A handler called `ctx.update(data)`; `reply` answers it (with an error when the job is not the processor's any more). */
  update(serial: number, data: JsonValue, reply: (error?: SerializedError & { code: string }) => void): void;
  /**
   * A handler's thread is gone, and the run `serial` with it. `culprit` is
   * the run that took the thread down, when one is known: the one whose code
   * the thread was executing when it died or got stuck, or the one the
   * thread was ended for (see killThreadOf). It may be `serial` itself (a
   * crash of that run), another run of the lane (this one is a bystander;
   * the culprit is reported last), or a run that had already ended but left
   * code behind. `undefined`: no job's code was running (the thread was
   * terminated from outside, or died in code no job started).
   */
  lost(serial: number, culprit: number | undefined, reason: string): void;
  /** A job queued in a lane (see dispatch) started there, in the slot of a run reported settled just before; its own end is reported after. */
  started(serial: number): void;
  /** A job queued in a lane left it without running: its abort dropped it, its lane had no run left to hand it a slot, or its thread is gone. Nothing of it ran. */
  dropped(serial: number): void;
}

export interface HandlerPoolOptions {
  /** The job type: sent once per batch, not once per job. */
  type: string;
  handlerUrl: string;
  threads: number;
  stuckThreadMs: number;
  events: HandlerPoolEvents;
}

interface Lane {
  readonly port: MessagePort;
  readonly status: Int32Array;
  readonly controller: AbortController;
  /** Its jobs: running, and queued (also in `queued`). */
  readonly jobs: Set<number>;
  /** Jobs waiting in the lane for one of its runs to end (see dispatch). */
  readonly queued: Set<number>;
  threadId: number | undefined;
  ready: boolean;
  broken: SerializedError | undefined;
  lastTick: number;
  lastTickAt: number;
  /** Why the main thread ended it, when it did. */
  killReason: string | undefined;
  /** The run the main thread ended it for, when it was one job's fault. */
  killedFor: number | undefined;
  dead: boolean;
}

/**
 * A lane queues at most this many jobs per handler it runs: enough that
 * handlers quicker than the main thread's answer find the next job waiting,
 * few enough that a queued job waits behind a handful of runs at most.
 */
const QUEUE_PER_RUN = 4;

const RUNNING_TYPESCRIPT = import.meta.url.endsWith('.ts');
const LANE_ENTRY = new URL('./lane-entry.mjs', import.meta.url);
const LANE_MODULE = new URL(RUNNING_TYPESCRIPT ? './lane-worker.ts' : './lane-worker.js', import.meta.url).href;
/** tsx's register API, for lane threads to load `.ts` (see lane-entry.mjs). */
// Also when the package runs built but the app runs under tsx: its actor or
// handler modules may then be TypeScript.
const TSX_API =
  RUNNING_TYPESCRIPT || process.execArgv.some((arg) => arg.includes('tsx')) ? resolveOrUndefined('tsx/esm/api') : undefined;

export class HandlerPool {
  readonly #options: HandlerPoolOptions;
  readonly #pool: Piscina<LaneTask, void>;
  readonly #lanes = new Set<Lane>();
  readonly #laneOf = new Map<number, Lane>();
  readonly #watchdog: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: HandlerPoolOptions) {
    this.#options = options;
    this.#pool = new Piscina<LaneTask, void>({
      filename: LANE_ENTRY.href,
      minThreads: options.threads,
      maxThreads: options.threads,
      // One lane per thread: a lane's thread is what a stuck handler costs.
      concurrentTasksPerWorker: 1,
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: { tsxApi: TSX_API, laneModule: LANE_MODULE },
    });
    if (Number.isFinite(options.stuckThreadMs)) {
      const every = Math.max(10, Math.min(1000, options.stuckThreadMs / 4));
      this.#watchdog = setInterval(() => this.#checkStuck(), every);
      this.#watchdog.unref();
    }
  }

  /** The pool's worker threads (for monitoring and fault injection). */
  get threads(): readonly import('node:worker_threads').Worker[] {
    return this.#pool.threads;
  }

  /** The thread id running a job's handler, once its lane has started. */
  threadIdOf(serial: number): number | undefined {
    return this.#laneOf.get(serial)?.threadId;
  }

  /** Whether a job's lane has loaded the handler module and the job is not waiting in its queue (so its handler has been called or is about to be). */
  isStarted(serial: number): boolean {
    const lane = this.#laneOf.get(serial);
    return lane?.ready === true && !lane.queued.has(serial);
  }

  /**
   * Sends jobs to the lanes, one message per lane. `start`: each to the
   * least busy lane, to run now. `queue`: each to the lane with the most
   * room (QUEUE_PER_RUN jobs per handler it runs, counting those just
   * started; none in a lane that has not loaded the handler module), to
   * start there when one of that lane's handlers ends, with no round trip
   * to the main thread; reported `started` when it does, or `dropped` when
   * its abort, its thread's end, or its lane running dry takes it out
   * unstarted. Returns the serials queued (jobs that found no room are not).
   */
  dispatch(start: readonly LaneJob[], queue: readonly LaneJob[] = []): number[] {
    const batches = new Map<Lane, { start: PackedJobs; queue: PackedJobs }>();
    const batchOf = (lane: Lane): { start: PackedJobs; queue: PackedJobs } => {
      let batch = batches.get(lane);
      if (batch === undefined) {
        batch = { start: [], queue: [] };
        batches.set(lane, batch);
      }
      return batch;
    };
    for (const job of start) {
      const lane = this.#pickLane();
      lane.jobs.add(job.serial);
      this.#laneOf.set(job.serial, lane);
      packLaneJob(batchOf(lane).start, job);
    }
    const queued: number[] = [];
    for (const job of queue) {
      let lane: Lane | undefined;
      let room = 0;
      for (const candidate of this.#lanes) {
        const candidateRoom = laneQueueRoom(candidate);
        if (candidateRoom > room) {
          lane = candidate;
          room = candidateRoom;
        }
      }
      if (lane === undefined) break;
      lane.jobs.add(job.serial);
      lane.queued.add(job.serial);
      this.#laneOf.set(job.serial, lane);
      queued.push(job.serial);
      packLaneJob(batchOf(lane).queue, job);
    }
    for (const [lane, batch] of batches) {
      if (lane.broken !== undefined) this.#failBroken(lane);
      // Together: the lane queues behind the runs it starts, before any of them can end.
      else send(lane, { kind: 'start', type: this.#options.type, jobs: batch.start, queue: batch.queue });
    }
    return queued;
  }

  /** Aborts the signals of running handlers. */
  abort(serials: readonly number[], cause: AbortCause): void {
    const byLane = new Map<Lane, number[]>();
    for (const serial of serials) {
      const lane = this.#laneOf.get(serial);
      if (lane === undefined) continue;
      const list = byLane.get(lane);
      if (list === undefined) byLane.set(lane, [serial]);
      else list.push(serial);
    }
    for (const [lane, list] of byLane) send(lane, { kind: 'abort', serials: list, cause });
  }

  /** Terminates the thread running a job's handler, that job's fault (its other jobs are reported lost as bystanders). */
  killThreadOf(serial: number, reason: string): void {
    const lane = this.#laneOf.get(serial);
    // A queued job has run no code: it cannot be what ails its thread.
    if (lane === undefined || lane.dead || lane.killReason !== undefined || lane.queued.has(serial)) return;
    lane.killedFor = serial;
    this.#kill(lane, reason);
  }

  /** Terminates every thread at once; running jobs are reported lost. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
    for (const lane of this.#lanes) {
      lane.killReason ??= 'the scheduler stopped';
      send(lane, { kind: 'close' });
    }
    await this.#pool.destroy();
  }

  #pickLane(): Lane {
    let best: Lane | undefined;
    for (const lane of this.#lanes) {
      if (lane.dead || lane.killReason !== undefined) continue;
      if (best === undefined || runningIn(lane) < runningIn(best)) best = lane;
    }
    if (best === undefined || (runningIn(best) > 0 && this.#liveLanes() < this.#options.threads)) return this.#newLane();
    return best;
  }

  #liveLanes(): number {
    let count = 0;
    for (const lane of this.#lanes) if (!lane.dead && lane.killReason === undefined) count++;
    return count;
  }

  #newLane(): Lane {
    const channel = new MessageChannel();
    const { buffer, view } = createLaneStatus();
    const lane: Lane = {
      port: channel.port1,
      status: view,
      controller: new AbortController(),
      jobs: new Set(),
      queued: new Set(),
      threadId: undefined,
      ready: false,
      broken: undefined,
      lastTick: 0,
      lastTickAt: performance.now(),
      killReason: undefined,
      killedFor: undefined,
      dead: false,
    };
    this.#lanes.add(lane);
    lane.port.on('message', (message: FromLane) => this.#receive(lane, message));
    const task: LaneTask = { handlerUrl: this.#options.handlerUrl, port: channel.port2, status: buffer };
    this.#pool
      .run(task, { transferList: [channel.port2], signal: lane.controller.signal })
      .then(
        () => this.#ended(lane, 'the handler thread ended its lane'),
        (error: unknown) => this.#ended(lane, error instanceof Error ? error.message : String(error)),
      );
    return lane;
  }

  #receive(lane: Lane, message: FromLane): void {
    switch (message.kind) {
      case 'ready':
        lane.ready = true;
        lane.threadId = message.threadId;
        lane.lastTickAt = performance.now();
        break;
      case 'broken':
        lane.broken = message.error;
        // Every job sent before the lane knew is answered now; later ones at once (see start).
        break;
      case 'settled': {
        const { results } = message;
        for (let at = 0; at < results.length; at += LANE_RESULT_FIELDS) {
          const serial = results[at] as number;
          const outcome = results[at + 1];
          // A queued job started in the slot of the run just before it: the count of runs never passes the slots.
          if (outcome === null) {
            if (lane.queued.delete(serial)) this.#options.events.started(serial);
            continue;
          }
          if (!lane.jobs.delete(serial)) continue;
          this.#laneOf.delete(serial);
          this.#options.events.settled(serial, outcome === true, results[at + 2]);
        }
        for (const serial of message.dropped) {
          if (!lane.queued.delete(serial)) continue;
          lane.jobs.delete(serial);
          this.#laneOf.delete(serial);
          this.#options.events.dropped(serial);
        }
        break;
      }
      case 'update':
        if (!lane.jobs.has(message.serial)) {
          send(lane, { kind: 'updated', request: message.request, error: { name: 'SchedulerError', code: 'halt', message: 'the job has ended' } });
          break;
        }
        this.#options.events.update(message.serial, message.data, (error) =>
          send(lane, error === undefined ? { kind: 'updated', request: message.request } : { kind: 'updated', request: message.request, error }),
        );
        break;
    }
    if (lane.broken !== undefined && lane.jobs.size > 0) this.#failBroken(lane);
  }

  /** A lane whose handler module did not load answers every job sent to it (those just picked for it included) with that error. */
  #failBroken(lane: Lane): void {
    const error = lane.broken as SerializedError;
    for (const serial of [...lane.jobs]) {
      lane.jobs.delete(serial);
      this.#laneOf.delete(serial);
      this.#options.events.settled(serial, false, error);
    }
  }

  #kill(lane: Lane, reason: string): void {
    if (lane.dead || lane.killReason !== undefined) return;
    lane.killReason = reason;
    lane.controller.abort(reason);
  }

  #ended(lane: Lane, error: string): void {
    if (lane.dead) return;
    lane.dead = true;
    this.#lanes.delete(lane);
    lane.port.close();
    const executing = Atomics.load(lane.status, CURRENT);
    const culprit = lane.killedFor ?? (executing === NO_JOB ? undefined : executing);
    const reason = lane.killReason ?? `the handler thread died: ${error}`;
    // Queued jobs never ran here: they are neither culprits nor bystanders of a run.
    const queued = [...lane.queued];
    lane.queued.clear();
    for (const serial of queued) {
      lane.jobs.delete(serial);
      this.#laneOf.delete(serial);
      this.#options.events.dropped(serial);
    }
    // The culprit last: each bystander's loss can still name the job that caused it.
    const serials = [...lane.jobs].sort((a, b) => Number(a === culprit) - Number(b === culprit));
    lane.jobs.clear();
    for (const serial of serials) {
      this.#laneOf.delete(serial);
      this.#options.events.lost(serial, culprit, reason);
    }
  }

  #checkStuck(): void {
    const now = performance.now();
    for (const lane of this.#lanes) {
      if (!lane.ready || lane.dead || lane.killReason !== undefined) continue;
      const tick = Atomics.load(lane.status, TICK);
      if (tick !== lane.lastTick) {
        lane.lastTick = tick;
        lane.lastTickAt = now;
      } else if (now - lane.lastTickAt > this.#options.stuckThreadMs && lane.jobs.size > 0) {
        this.#kill(lane, `the handler thread made no progress for ${Math.round(now - lane.lastTickAt)} ms`);
      }
    }
  }
}

/** Handlers running in a lane (its jobs but the queued ones). */
function runningIn(lane: Lane): number {
  return lane.jobs.size - lane.queued.size;
}

function laneQueueRoom(lane: Lane): number {
  if (!lane.ready || lane.dead || lane.killReason !== undefined || lane.broken !== undefined) return 0;
  return Math.max(0, runningIn(lane) * QUEUE_PER_RUN - lane.queued.size);
}

function send(lane: Lane, message: ToLane): void {
  if (!lane.dead) lane.port.postMessage(message);
}

function resolveOrUndefined(specifier: string): string | undefined {
  try {
    return import.meta.resolve(specifier);
  } catch {
    return undefined;
  }
}
