// The owner's side of a shared embedded store: it listens on the store's
// socket and runs the calls of the other processes. Each call is one method
// of the jobs API (see served-jobs-calls.ts) or one the application adds
// (subscriptions), run as if this process had made it, so the jobs layer's
// own batching puts the calls of every process into shared transactions.
//
// Backpressure: a connection with too many calls in flight is not read from
// until half of them are answered, and one whose replies are not being read
// is not read from either until its socket drains.

import { type Server, type Socket, createServer } from 'node:net';
import { chmodSync } from 'node:fs';
import { JobsError } from '../errors.js';
import { FrameReader, FrameWriter, encodeFrame } from './wire-frames.js';
import {
  CALL,
  CANCEL,
  FAILURE,
  type Hello,
  NotedAnswer,
  PROTOCOL_NAME,
  PROTOCOL_VERSION,
  PUSH,
  RESULT,
  type Welcome,
  toWireError,
} from './wire-protocol.js';
import { type StoreSocket, prepareSocket } from './socket-path.js';

/** Calls in flight on one connection above which it is not read from. */
const MAX_CALLS_IN_FLIGHT = 8192;
/** How long `close` waits for the methods of the calls it aborted to settle. */
const SETTLE_ON_CLOSE_MS = 5_000;

/** A served call's view of its caller. */
export interface ServedCall {
  /** Aborted when the caller cancels the call or its process goes away. */
  readonly signal: AbortSignal;
  readonly connection: ServedConnection;
  /**
   * Answers the call now, before its method's promise settles (which then
   * answers nothing, and the caller's cancel or loss no longer reaches
   * `signal`). For a waiting accept handed its jobs: the answer leaves as
   * the write that handed them becomes readable, not some turns of the
   * microtask queue later. The value is sent as a returned one would be
   * (a NotedAnswer with its note).
   */
  answer(value: unknown): void;
  /**
   * Encodes `value` as the call's answer ahead of time: `answer` with this
   * very value then sends those bytes. It tells whether the answer can
   * leave before anything is done that a failed answer would undo (a
   * waiting accept's jobs are given back when they cannot). Another value
   * prepared replaces it. False, with nothing prepared, when the wire
   * cannot carry `value` (JSON nested deeper than msgpackr packs): `answer`
   * would send a failure instead. Never throws, as it may run in the
   * store's callback.
   */
  prepare(value: unknown): boolean;
  /** Whether the call has been answered (by `answer`). */
  readonly answered: boolean;
}

/** One connected process. */
export interface ServedConnection {
  readonly pid: number;
  /** Whether the process is still connected. */
  readonly open: boolean;
  /** Sends an event on `channel`; dropped once the connection has closed. */
  push(channel: string, payload: unknown): void;
  /** Runs `fn` when the connection closes (at once if it has). */
  onClose(fn: () => void): void;
}

/** A method the owner serves: the caller's arguments in, the reply out (or a thrown error). */
export type ServedMethod = (args: unknown[], call: ServedCall) => Promise<unknown> | unknown;

export class StoreServer {
  readonly #server: Server;
  readonly #methods: ReadonlyMap<string, ServedMethod>;
  readonly #connections = new Set<Connection>();
  readonly #gate: Gate = { open: false, waiting: [] };
  /** The calls whose methods have not settled yet, on every connection: `close` waits for them. */
  readonly #running = new Set<Promise<void>>();
  #closed = false;

  private constructor(server: Server, methods: ReadonlyMap<string, ServedMethod>) {
    this.#server = server;
    this.#methods = methods;
  }

  /** Listens on the store's socket (removing a stale one first) with mode 0600. */
  static async listen(socket: StoreSocket, methods: ReadonlyMap<string, ServedMethod>): Promise<StoreServer> {
    prepareSocket(socket);
    let served: StoreServer | undefined;
    const server = createServer({ noDelay: true }, (conn) => served?.accept(conn));
    served = new StoreServer(server, methods);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socket.path, () => {
        server.off('error', reject);
        resolve();
      });
    });
    chmodSync(socket.path, 0o600);
    return served;
  }

  /** Processes connected now. */
  get connections(): number {
    return this.#connections.size;
  }

  /** @internal */
  accept(socket: Socket): void {
    if (this.#closed) {
      socket.destroy();
      return;
    }
    const connection = new Connection(socket, this.#methods, this.#gate, this.#running, () => this.#connections.delete(connection));
    this.#connections.add(connection);
  }

  /**
   * Starts answering calls. Calls that arrive before (the server listens as
   * soon as the store is open, while its owner is still registering what it
   * serves) wait for this.
   */
  openGate(): void {
    if (this.#gate.open) return;
    this.#gate.open = true;
    for (const run of this.#gate.waiting.splice(0)) run();
  }

  /** Stops listening and drops every connection (their calls in flight are signalled). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const closing = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const connection of this.#connections) connection.destroy();
    await closing;
    // The methods of the calls just aborted finish what an abort leaves to
    // do (a waiting accept gives back the jobs a write took for it) before
    // the owner closes its jobs handle under them; a method that ignores its
    // abort does not hold the close up for long.
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SETTLE_ON_CLOSE_MS);
    });
    await Promise.race([Promise.allSettled([...this.#running]), bound]);
    clearTimeout(timer);
  }
}

interface Gate {
  open: boolean;
  waiting: (() => void)[];
}

class Connection implements ServedConnection {
  readonly #socket: Socket;
  readonly #writer: FrameWriter;
  readonly #reader = new FrameReader();
  readonly #methods: ReadonlyMap<string, ServedMethod>;
  readonly #gate: Gate;
  readonly #running: Set<Promise<void>>;
  readonly #inFlight = new Map<number, CallInFlight>();
  readonly #closeHandlers: (() => void)[] = [];
  readonly #forget: () => void;
  #pid = 0;
  #greeted = false;
  #open = true;
  /** Whether its end was handled (by `destroy`, or by the socket's 'close'). */
  #ended = false;
  #paused = false;
  #draining = false;

  constructor(socket: Socket, methods: ReadonlyMap<string, ServedMethod>, gate: Gate, running: Set<Promise<void>>, forget: () => void) {
    this.#socket = socket;
    this.#methods = methods;
    this.#gate = gate;
    this.#running = running;
    this.#forget = forget;
    this.#writer = new FrameWriter(socket);
    socket.on('data', (chunk: Buffer) => this.#received(chunk));
    socket.on('drain', () => {
      this.#draining = false;
      this.#resumeIfCalm();
    });
    socket.on('close', () => this.#closed());
    socket.on('error', () => {}); // 'close' follows
  }

  get pid(): number {
    return this.#pid;
  }

  get open(): boolean {
    return this.#open;
  }

  push(channel: string, payload: unknown): void {
    if (!this.#open) return;
    this.#send([PUSH, channel, payload]);
  }

  onClose(fn: () => void): void {
    if (!this.#open) fn();
    else this.#closeHandlers.push(fn);
  }

  destroy(): void {
    this.#socket.destroy();
    // Its calls end now, not at the socket's 'close' event some turns later:
    // an answer written in between would go to a socket that is gone, and a
    // waiting accept answered so would hold its jobs from the queue until
    // the activity timeout, where an aborted one gives them back.
    this.#closed();
  }

  #received(chunk: Buffer): void {
    let messages: unknown[];
    try {
      messages = this.#reader.push(chunk);
    } catch {
      this.#refuse('the bytes received are not frames of this protocol');
      return;
    }
    for (const message of messages) {
      if (!this.#greeted) {
        if (!this.#greet(message)) return;
        continue;
      }
      if (!Array.isArray(message)) {
        this.destroy();
        return;
      }
      if (message[0] === CALL && !this.#gate.open) {
        const [, id, method, args] = message as [number, number, string, unknown[]];
        // A call of a process gone before the gate opened is not run: nothing would abort it any more.
        this.#gate.waiting.push(() => {
          if (this.#open) this.#call(id, method, args);
        });
      } else if (message[0] === CALL) this.#call(message[1] as number, message[2] as string, message[3] as unknown[]);
      else if (message[0] === CANCEL) this.#inFlight.get(message[1] as number)?.abort();
      else {
        this.destroy();
        return;
      }
    }
  }

  #greet(message: unknown): boolean {
    const hello = message as Partial<Hello> | undefined;
    if (typeof hello !== 'object' || hello === null || hello.protocol !== PROTOCOL_NAME) {
      this.#refuse(`this socket serves ${PROTOCOL_NAME} and the first message was not its hello`);
      return false;
    }
    if (hello.version !== PROTOCOL_VERSION) {
      this.#refuse(`the store's owner (pid ${process.pid}) speaks version ${PROTOCOL_VERSION} of ${PROTOCOL_NAME}, the client version ${String(hello.version)}`);
      return false;
    }
    this.#greeted = true;
    this.#pid = typeof hello.pid === 'number' ? hello.pid : 0;
    this.#send({ protocol: PROTOCOL_NAME, version: PROTOCOL_VERSION, pid: process.pid } satisfies Welcome);
    return true;
  }

  #refuse(reason: string): void {
    this.#send({ refused: reason, version: PROTOCOL_VERSION } satisfies Welcome);
    this.#socket.end();
    this.#open = false;
  }

  #call(id: number, method: string, args: unknown[]): void {
    const served = this.#methods.get(method);
    if (served === undefined || !Array.isArray(args)) {
      const error = new JobsError(
        'unavailable',
        `the store's owner (pid ${process.pid}) does not serve ${JSON.stringify(method)}: it opened the store with openJobs, which serves the jobs API alone (startJobs also serves subscriptions)`,
      );
      this.#send([FAILURE, id, toWireError(error)]);
      return;
    }
    const call = new CallInFlight(this, id);
    this.#inFlight.set(id, call);
    if (this.#inFlight.size >= MAX_CALLS_IN_FLIGHT && !this.#paused) {
      this.#paused = true;
      this.#socket.pause();
    }
    let result: Promise<unknown>;
    try {
      result = Promise.resolve(served(args, call));
    } catch (error) {
      result = Promise.reject(error);
    }
    const settled = result.then(
      (value) => call.answer(value),
      (error: unknown) => {
        if (call.answered) return;
        call.answered = true;
        this.#answer(id, [FAILURE, id, toWireError(error)]);
      },
    );
    this.#running.add(settled);
    const forget = (): void => void this.#running.delete(settled);
    settled.then(forget, forget);
  }

  /** @internal The answer of call `id`, encoded (see CallInFlight.answer). */
  answerResult(id: number, frame: Buffer): void {
    this.#inFlight.delete(id);
    if (!this.#open) return;
    this.#sendFrame(frame);
    this.#resumeIfCalm();
  }

  #answer(id: number, message: unknown): void {
    this.#inFlight.delete(id);
    if (!this.#open) return;
    this.#send(message);
    this.#resumeIfCalm();
  }

  #send(message: unknown): void {
    this.#sendFrame(encodeFrame(message));
  }

  #sendFrame(frame: Buffer): void {
    if (this.#writer.writeFrame(frame)) return;
    this.#draining = true;
    if (!this.#paused) {
      this.#paused = true;
      this.#socket.pause();
    }
  }

  #resumeIfCalm(): void {
    if (this.#paused && !this.#draining && this.#inFlight.size <= MAX_CALLS_IN_FLIGHT / 2) {
      this.#paused = false;
      this.#socket.resume();
    }
  }

  #closed(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#open = false;
    this.#forget();
    for (const call of this.#inFlight.values()) call.abort();
    for (const fn of this.#closeHandlers.splice(0)) fn();
  }
}

function resultFrame(id: number, value: unknown): Buffer {
  return encodeFrame(value instanceof NotedAnswer ? [RESULT, id, value.value, value.note] : [RESULT, id, value]);
}

/** A call of a connection not answered yet: its caller's view (ServedCall), and the abort its cancel or loss signals. */
class CallInFlight implements ServedCall {
  readonly connection: Connection;
  readonly #id: number;
  readonly #controller = new AbortController();
  answered = false;
  /** The answer `prepare` encoded, and its frame. */
  #prepared: unknown;
  #preparedFrame: Buffer | undefined;

  constructor(connection: Connection, id: number) {
    this.connection = connection;
    this.#id = id;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  answer(value: unknown): void {
    if (this.answered) return;
    this.answered = true;
    let frame = this.#preparedFrame !== undefined && this.#prepared === value ? this.#preparedFrame : undefined;
    this.#preparedFrame = undefined;
    this.#prepared = undefined;
    if (frame === undefined) {
      // An answer the wire cannot carry still answers the call: the caller
      // would wait for ever, and a throw here would reach the store's
      // callback that answers a waiting accept.
      try {
        frame = resultFrame(this.#id, value);
      } catch (error) {
        frame = encodeFrame([FAILURE, this.#id, toWireError(error)]);
      }
    }
    this.connection.answerResult(this.#id, frame);
  }

  prepare(value: unknown): boolean {
    this.#prepared = undefined;
    this.#preparedFrame = undefined;
    if (this.answered) return false;
    try {
      this.#preparedFrame = resultFrame(this.#id, value);
    } catch {
      return false;
    }
    this.#prepared = value;
    return true;
  }

  abort(): void {
    this.#controller.abort();
  }
}
