// A frame reader reads each chunk during `push` alone: what it keeps (the
// start of a frame not complete yet) it copies, and binary values come out
// as copies too. So a client's socket reads every chunk into one buffer,
// over and over, and a frame split over reads, or a message holding bytes,
// still comes out whole and unchanged.

import type { Socket } from 'node:net';
import test from 'ava';
import { FrameReader, FrameWriter, MAX_FRAME_BYTES } from '../../packages/core/src/sharing/wire-frames.js';

/** The bytes a frame writer sends for `message`. */
function frame(message: unknown): Buffer {
  const written: Buffer[] = [];
  const socket = { write: (bytes: Buffer) => written.push(Buffer.from(bytes)) > 0, cork: () => {}, uncork: () => {} };
  new FrameWriter(socket as unknown as Socket).write(message);
  return Buffer.concat(written);
}

/** Pushes `bytes` through one reused buffer, `size` bytes at a time, scribbling over it after each push. */
function readThroughOneBuffer(reader: FrameReader, bytes: Buffer, size: number): unknown[] {
  const buffer = Buffer.alloc(size);
  const messages: unknown[] = [];
  for (let at = 0; at < bytes.length; at += size) {
    const length = bytes.copy(buffer, 0, at, Math.min(bytes.length, at + size));
    messages.push(...reader.push(buffer.subarray(0, length)));
    buffer.fill(0xee);
  }
  return messages;
}

test('frames split over reads of one reused buffer come out whole', (t) => {
  const messages = [
    [2, 1, { id: 'a', data: 'x'.repeat(5_000) }],
    [2, 2, 'short'],
    [4, 'watch:1', true],
    [2, 3, { id: 'b', data: 'y'.repeat(70_000) }],
  ];
  const bytes = Buffer.concat(messages.map(frame));
  for (const size of [1, 3, 7, 4096, 65_536]) {
    t.deepEqual(readThroughOneBuffer(new FrameReader(), bytes, size), messages, `reads of ${size} bytes`);
  }
});

test('binary values are copies, not views of the bytes read', (t) => {
  const message = [2, 1, { versionstamp: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]) }];
  const [read] = readThroughOneBuffer(new FrameReader(), frame(message), 65_536) as [[number, number, { versionstamp: Uint8Array }]];
  t.deepEqual([...read[2].versionstamp], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
});

test('a frame over the limit is refused as soon as its header is in', (t) => {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(MAX_FRAME_BYTES + 1, 0);
  const reader = new FrameReader();
  t.deepEqual(reader.push(header.subarray(0, 2)), []);
  t.throws(() => reader.push(header.subarray(2)), { instanceOf: RangeError });
});
