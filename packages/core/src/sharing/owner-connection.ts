// A client's connection to the owner of a shared embedded store: calls go
// out as frames (one batch per tick), each answer settles its call, and
// events pushed on a channel go to that channel's listener. When the
// connection drops, every call in flight rejects with `owner_lost`: it may
// or may not have taken effect, and only the caller knows whether it is
// safe to make again.

import { type Socket, connect } from 'node:net';
import { JobsError } from '../errors.js';
import { noteEmptiedQueue } from '../jobs/accept-calls.js';
import { FrameReader, FrameWriter, encodeFrame } from './wire-frames.js';
import {
  CALL,
  CANCEL,
  FAILURE,
  type Hello,
  type OwnerMessage,
  PROTOCOL_NAME,
  PROTOCOL_VERSION,
  PUSH,
  RESULT,
  type Welcome,
  type WireError,
  fromWireError,
} from './wire-protocol.js';

/**
 * The bytes read from the owner go from the socket's handle straight to
 * the frame reader (`onread`), with no stream buffer or 'data' event
 * between an answer and the call it settles: for an idle worker that answer
 * is its next job. Every read goes into one buffer of this size; the
 * reader copies what it keeps.
 */
const READ_BUFFER_BYTES = 64 * 1024;

/** Where the bytes of each read go: the welcome's reader, then the connection's. */
interface SocketReading {
  bytes(chunk: Buffer): void;
}

interface PendingCall {
  resolve(value: unknown): void;
  reject(error: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

function stopListening(pending: PendingCall): void {
  if (pending.onAbort !== undefined) pending.signal?.removeEventListener('abort', pending.onAbort);
}

/** Why a connection could not be made: nobody listens (yet), or something that will not change by trying again. */
/** How long `open` waits for the owner's welcome when its caller does not say. */
const DEFAULT_WELCOME_WITHIN_MS = 10_000;

export class ConnectRefused extends Error {
  constructor(
    readonly errno: string,
    message: string,
  ) {
    super(message);
  }
}

export class OwnerConnection {
  readonly #socket: Socket;
  readonly #writer: FrameWriter;
  readonly #reader: FrameReader;
  readonly #calls = new Map<number, PendingCall>();
  readonly #channels = new Map<string, (payload: unknown) => void>();
  readonly #lost: Promise<JobsError>;
  /** What `onLost` registered and has not stopped. */
  readonly #lostListeners = new Set<(error: JobsError) => void>();
  #signalLost!: (error: JobsError) => void;
  #nextId = 1;
  #open = true;
  /** The owner's pid, from its welcome. */
  readonly ownerPid: number;

  private constructor(socket: Socket, reading: SocketReading, reader: FrameReader, ownerPid: number, rest: unknown[]) {
    this.#socket = socket;
    this.#reader = reader;
    this.ownerPid = ownerPid;
    this.#writer = new FrameWriter(socket);
    this.#lost = new Promise((resolve) => {
      this.#signalLost = resolve;
    });
    void this.#lost.then((error) => {
      for (const listener of this.#lostListeners) listener(error);
      this.#lostListeners.clear();
    });
    reading.bytes = (chunk) => this.#received(chunk);
    socket.on('close', () => this.#closed());
    socket.on('error', () => {}); // 'close' follows
    for (const message of rest) this.#dispatch(message as OwnerMessage);
  }

  /**
   * Connects and says hello. Rejects with {@link ConnectRefused} when nobody
   * listens on `path` (ENOENT, ECONNREFUSED: no owner yet, or a stale
   * socket), and also when the owner has not answered the hello within
   * `welcomeWithinMs` (ETIMEDOUT: a process stopped or hung, whose socket
   * the kernel still accepts connections on); with JobsError
   * `access_denied` on EACCES, and with `protocol_mismatch` when the owner
   * refuses this version.
   */
  static async open(path: string, welcomeWithinMs = DEFAULT_WELCOME_WITHIN_MS): Promise<OwnerConnection> {
    const reading: SocketReading = { bytes: () => {} };
    const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    const callback = (length: number): boolean => {
      reading.bytes(buffer.subarray(0, length));
      return true;
    };
    const socket = connect({ path, noDelay: true, onread: { buffer, callback } });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', (error: NodeJS.ErrnoException) => {
        socket.destroy();
        const errno = error.code ?? 'EIO';
        if (errno === 'EACCES' || errno === 'EPERM') {
          reject(new JobsError('access_denied', `the store's socket ${path} refused this process (${errno}): it belongs to another user`, { cause: error }));
        } else reject(new ConnectRefused(errno, `nobody serves the store's socket ${path} (${errno})`));
      });
    });
    const reader = new FrameReader();
    const writer = new FrameWriter(socket);
    writer.write({ protocol: PROTOCOL_NAME, version: PROTOCOL_VERSION, pid: process.pid } satisfies Hello);
    const { welcome, rest } = await new Promise<{ welcome: Welcome; rest: unknown[] }>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        let messages: unknown[];
        try {
          messages = reader.push(chunk);
        } catch (error) {
          cleanup();
          socket.destroy();
          reject(new JobsError('protocol_mismatch', `the store's socket ${path} does not speak ${PROTOCOL_NAME}`, { cause: error }));
          return;
        }
        if (messages.length === 0) return;
        cleanup();
        resolve({ welcome: messages[0] as Welcome, rest: messages.slice(1) });
      };
      const onClose = (): void => {
        cleanup();
        reject(new ConnectRefused('ECONNRESET', `the store's owner closed the connection to ${path} before its welcome`));
      };
      // An owner answers a hello in the turn it reads it; one that does not is stopped or hung.
      const timer = setTimeout(() => {
        cleanup();
        socket.destroy();
        reject(new ConnectRefused('ETIMEDOUT', `the store's owner did not answer on ${path} within ${welcomeWithinMs} ms`));
      }, welcomeWithinMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        reading.bytes = () => {};
        socket.off('close', onClose);
      };
      reading.bytes = onData;
      socket.on('close', onClose);
      socket.on('error', () => {});
    });
    const answer = typeof welcome === 'object' && welcome !== null ? welcome : undefined;
    // A welcome in another version is a mismatch too: an owner that speaks several answers in the client's.
    if (answer === undefined || 'refused' in answer || answer.protocol !== PROTOCOL_NAME || answer.version !== PROTOCOL_VERSION) {
      socket.destroy();
      let reason = 'its welcome is not one';
      if (answer !== undefined && 'refused' in answer) reason = answer.refused;
      else if (answer?.protocol === PROTOCOL_NAME) reason = `it speaks version ${String(answer.version)}`;
      throw new JobsError(
        'protocol_mismatch',
        `the store's owner and this process (${PROTOCOL_NAME} version ${PROTOCOL_VERSION}) do not speak one protocol: ${reason}; run the same jobtree version in every process of one store`,
      );
    }
    return new OwnerConnection(socket, reading, reader, answer.pid, rest);
  }

  get open(): boolean {
    return this.#open;
  }

  /** Resolves, with the error calls in flight got, once the connection has dropped. */
  get lost(): Promise<JobsError> {
    return this.#lost;
  }

  /**
   * Calls `listener` once the connection has dropped, as `lost` does, until
   * the function returned is called. For what may end long before the
   * connection (a watch, a subscription): a reaction to `lost` cannot be
   * taken back, and would keep what it refers to for as long as the
   * connection lives.
   */
  onLost(listener: (error: JobsError) => void): () => void {
    if (!this.#open) {
      void this.#lost.then(listener);
      return () => {};
    }
    this.#lostListeners.add(listener);
    return () => void this.#lostListeners.delete(listener);
  }

  /** Calls `method` in the owner. `signal` cancels it there (for waits: an accept). */
  call(method: string, args: unknown[], signal?: AbortSignal): Promise<unknown> {
    if (!this.#open) return Promise.reject(this.#lostError());
    const id = this.#nextId++;
    // Encoded before the call is counted in flight: arguments the wire
    // cannot carry fail the call, typed, and leave nothing waiting behind.
    let frame: Buffer;
    try {
      frame = encodeFrame([CALL, id, method, args]);
    } catch (error) {
      return Promise.reject(
        new JobsError('invalid_job_data', `the arguments of ${method} cannot cross to the store's owner (pid ${this.ownerPid}): ${String(error)}`, { cause: error }),
      );
    }
    return new Promise((resolve, reject) => {
      const pending: PendingCall = { resolve, reject, signal, onAbort: undefined };
      if (signal !== undefined) {
        pending.onAbort = () => {
          if (this.#open && this.#calls.has(id)) this.#writer.write([CANCEL, id]);
        };
        signal.addEventListener('abort', pending.onAbort, { once: true });
      }
      this.#calls.set(id, pending);
      this.#writer.writeFrame(frame);
    });
  }

  /** Routes the events pushed on `channel` to `listener` (one per channel). */
  listen(channel: string, listener: (payload: unknown) => void): void {
    this.#channels.set(channel, listener);
  }

  unlisten(channel: string): void {
    this.#channels.delete(channel);
  }

  close(): void {
    this.#socket.destroy();
  }

  #received(chunk: Buffer): void {
    let messages: unknown[];
    try {
      messages = this.#reader.push(chunk);
    } catch {
      this.#socket.destroy();
      return;
    }
    for (const message of messages) this.#dispatch(message as OwnerMessage);
  }

  #dispatch(message: OwnerMessage): void {
    if (!Array.isArray(message)) return;
    const kind = message[0];
    if (kind === PUSH) {
      this.#channels.get(message[1])?.(message[2]);
      return;
    }
    const pending = this.#calls.get(message[1]);
    if (pending === undefined) return;
    this.#calls.delete(message[1]);
    if (kind === RESULT) {
      if (message[3] === 'emptied_queue' && Array.isArray(message[2])) noteEmptiedQueue(message[2]);
      pending.resolve(message[2]);
    }
    else if (kind === FAILURE) pending.reject(fromWireError(message[2] as WireError));
    // Let go of once the caller has resumed (later in this turn): an answer
    // to a waiting accept is a job for an idle worker, whose handler then
    // starts with nothing else on the way. An abort meanwhile finds the call
    // gone and sends nothing.
    if (pending.onAbort !== undefined) setImmediate(stopListening, pending);
  }

  #lostError(): JobsError {
    return new JobsError(
      'owner_lost',
      `the store's owner (pid ${this.ownerPid}) went away with this call in flight: it may or may not have taken effect`,
    );
  }

  #closed(): void {
    if (!this.#open) return;
    this.#open = false;
    const error = this.#lostError();
    for (const pending of this.#calls.values()) {
      if (pending.onAbort !== undefined) pending.signal?.removeEventListener('abort', pending.onAbort);
      pending.reject(error);
    }
    this.#calls.clear();
    this.#signalLost(error);
  }
}
