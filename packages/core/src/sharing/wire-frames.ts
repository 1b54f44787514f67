// Frames between the processes of one store: a 4-byte big-endian length,
// then one message encoded with msgpackr. The first frame written in a tick
// goes out at once, in one system call: a connection that is idle (a job
// handed to a waiting worker in another process, the answer to a lone call)
// waits for nothing. The frames written after it in the same tick are held
// (the socket is corked until the next tick) and go out together, so a
// burst of calls, or of replies, travels as one batch.

import type { Socket } from 'node:net';
import { Packr } from 'msgpackr';

/** Frames above this are refused: a peer sending one is not speaking this protocol. */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024;

// Plain msgpack maps and arrays, which any msgpack decoder reads: msgpackr's
// records extension packs faster and smaller, but is a format of its own to
// keep in step across versions (a change of it is a protocol version).
const packr = new Packr({ useRecords: false, mapsAsObjects: true });

export class FrameWriter {
  readonly #socket: Socket;
  #corked = false;

  constructor(socket: Socket) {
    this.#socket = socket;
  }

  /** Sends one message; returns false once the socket's buffer is full (wait for 'drain'). */
  write(message: unknown): boolean {
    const body = packr.pack(message);
    const header = Buffer.allocUnsafe(4);
    header.writeUInt32BE(body.length, 0);
    const socket = this.#socket;
    if (this.#corked) {
      socket.write(header);
      return socket.write(body);
    }
    // Header and body in one write of the two (uncork sends them together).
    socket.cork();
    socket.write(header);
    const room = socket.write(body);
    socket.uncork();
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

/** Splits a byte stream into messages. */
export class FrameReader {
  #buffered: Buffer[] = [];
  #bytes = 0;

  /** Adds received bytes; returns the messages they complete (throws on a frame that cannot be one). */
  push(chunk: Buffer): unknown[] {
    this.#buffered.push(chunk);
    this.#bytes += chunk.length;
    if (this.#bytes < 4) return [];
    let data = this.#buffered.length === 1 ? this.#buffered[0]! : Buffer.concat(this.#buffered, this.#bytes);
    const messages: unknown[] = [];
    let at = 0;
    while (data.length - at >= 4) {
      const length = data.readUInt32BE(at);
      if (length > MAX_FRAME_BYTES) throw new RangeError(`a frame of ${length} bytes is over the limit of ${MAX_FRAME_BYTES}`);
      if (data.length - at - 4 < length) break;
      messages.push(packr.unpack(data.subarray(at + 4, at + 4 + length)));
      at += 4 + length;
    }
    data = data.subarray(at);
    this.#buffered = data.length === 0 ? [] : [data];
    this.#bytes = data.length;
    return messages;
  }
}
