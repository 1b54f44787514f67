// A malformed request on a connection whose event stream is open is not
// answered in that connection: a raw 400 written there would land in the
// middle of the stream's body. The connection is closed instead.

import test from 'ava';
import { eventually, startAdminApp } from './fixtures/admin-app.js';
import { rawExchange } from './fixtures/raw-http.js';

test('garbage sent behind an open event stream closes the connection without writing an HTTP answer into the stream', async (t) => {
  const { admin } = await startAdminApp(t);
  const host = new URL(admin.url).host;
  const stream = await rawExchange(admin.url, `GET /api/events HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  t.teardown(() => stream.socket.destroy());
  await eventually(() => stream.received().includes('event: hello'), 10_000, 'the stream to start');
  stream.socket.write('THIS IS NOT HTTP\r\n\r\n');
  const received = await Promise.race([
    stream.closed,
    new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`still open: ${JSON.stringify(stream.received().slice(-200))}`)), 10_000)),
  ]);
  t.regex(received, /^HTTP\/1\.1 200 /);
  t.is(received.match(/HTTP\/1\.1 /g)?.length, 1, `only the stream's own status line: ${JSON.stringify(received.slice(-300))}`);
});

test('a request trickled behind an open event stream is cut at the header timeout without a 408 written into the stream', async (t) => {
  t.timeout(60_000);
  const { admin } = await startAdminApp(t);
  const host = new URL(admin.url).host;
  const stream = await rawExchange(admin.url, `GET /api/events HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  t.teardown(() => stream.socket.destroy());
  await eventually(() => stream.received().includes('event: hello'), 10_000, 'the stream to start');
  stream.socket.write(`GET /api/status HTTP/1.1\r\nHost: ${host}\r\nX-Slow: `);
  const received = await Promise.race([
    stream.closed,
    new Promise<string>((resolve) => setTimeout(() => resolve(stream.received()), 45_000)),
  ]);
  t.is(received.match(/HTTP\/1\.1 /g)?.length, 1, `only the stream's own status line: ${JSON.stringify(received.slice(-300))}`);
});
