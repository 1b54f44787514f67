// Frames between the processes of one store: a 4-byte big-endian length,
// then one message encoded with msgpackr. The first frame written in a tick
// goes out at once, in one system call: a connection that is idle (a job
// handed to a waiting worker in another process, the answer to a lone call)
// waits for nothing. The frames written after it in the same tick are held
// (the socket is corked until the next tick) and go out together, so a
// burst of calls, or of replies, travels as one batch.

import type { Socket } from 'node:net';
import { Packr, RESERVE_START_SPACE } from 'msgpackr';

/** The frame's length, before its body. */
const HEADER_BYTES = 4;

/** Frames above this are refused: a peer sending one is not speaking this protocol. */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024;

// Plain msgpack maps and arrays, which any msgpack decoder reads: msgpackr's
// records extension packs faster and smaller, but is a format of its own to
// keep in step across versions (a change of it is a protocol version).
// Binary values are decoded as copies (`copyBuffers`), never as views of
// the bytes received, which a reader may reuse for the next read.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, copyBuffers: true });

export class FrameWriter {
  readonly #socket: Socket;
  #corked = false;

  constructor(socket: Socket) {
    this.#socket = socket;
  }

  /** Sends one message; returns false once the socket's buffer is full (wait for 'drain'). */
  write(message: unknown): boolean {
    return this.writeFrame(encodeFrame(message));
  }

  /** Sends one frame of {@link encodeFrame}, as `write` does its message. */
  writeFrame(frame: Buffer): boolean {
    const socket = this.#socket;
    if (this.#corked) return socket.write(frame);
    const room = socket.write(frame);
    this.#corked = true;
    socket.cork();
    process.nextTick(this.#uncork);
    return room;
  }

  readonly #uncork = (): void => {
    this.#corked = false;
    this.#socket.uncork();
  };
}

/**
 * One message as the frame that carries it. Encoded apart from its write,
 * an answer is known to cross the wire before anything is done that its
 * failure would undo (a waiting accept's jobs are given back when it
 * cannot), and its write then costs nothing but the system call.
 */
export function encodeFrame(message: unknown): Buffer {
  // The header goes in the space msgpackr leaves before the body: one
  // buffer, one write, no copy.
  const frame = packr.pack(message, RESERVE_START_SPACE | HEADER_BYTES);
  frame.writeUInt32BE(frame.length - HEADER_BYTES, 0);
  return frame;
}

/** A frame's body length, from its header at `at`. */
function frameLength(data: Buffer, at: number): number {
  const length = data.readUInt32BE(at);
  if (length > MAX_FRAME_BYTES) throw new RangeError(`a frame of ${length} bytes is over the limit of ${MAX_FRAME_BYTES}`);
  return length;
}

/**
 * Splits a byte stream into messages. A chunk is read during `push` alone:
 * what it keeps of one (a frame not complete yet) it copies, so that a
 * socket may read into one buffer over and over (see owner-connection.ts).
 */
export class FrameReader {
  /** The start of a frame not complete yet. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** The bytes that frame has in all, header included, once its header is in (0 before). */
  #needed = 0;

  /** Adds received bytes; returns the messages they complete (throws on a frame that cannot be one). */
  push(chunk: Buffer): unknown[] {
    if (this.#heldBytes === 0) return this.#split(chunk);
    this.#held.push(Buffer.from(chunk));
    this.#heldBytes += chunk.length;
    // A large frame arrives in many chunks: they are joined once, when it is complete.
    if (this.#needed === 0 && this.#heldBytes >= HEADER_BYTES) this.#needed = HEADER_BYTES + frameLength(Buffer.concat(this.#held, HEADER_BYTES), 0);
    if (this.#needed === 0 || this.#heldBytes < this.#needed) return [];
    const data = Buffer.concat(this.#held, this.#heldBytes);
    this.#held = [];
    this.#heldBytes = 0;
    this.#needed = 0;
    return this.#split(data);
  }

  /** The messages of the frames `data` holds whole; the rest is held. */
  #split(data: Buffer): unknown[] {
    const messages: unknown[] = [];
    let at = 0;
    while (data.length - at >= HEADER_BYTES) {
      const length = frameLength(data, at);
      if (data.length - at - HEADER_BYTES < length) break;
      messages.push(packr.unpack(data.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length)));
      at += HEADER_BYTES + length;
    }
    if (at < data.length) {
      this.#held = [Buffer.from(data.subarray(at))];
      this.#heldBytes = data.length - at;
      this.#needed = this.#heldBytes >= HEADER_BYTES ? HEADER_BYTES + frameLength(data, at) : 0;
    }
    return messages;
  }
}
