// A client that sends its request slowly cannot hold a socket of the admin
// endpoint for ever: its headers and its whole request have a time limit,
// while an event stream (whose request is complete) stays open past both.

import { Writable } from 'node:stream';
import test from 'ava';
import { pino } from 'pino';
import { eventually, followEvents, startAdminApp } from './fixtures/admin-app.js';
import { rawExchange } from './fixtures/raw-http.js';

test('trickled headers and a body that never completes are answered 408 and closed; an event stream stays open', async (t) => {
  const errors: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) if ((JSON.parse(line) as { level: number }).level >= 50) errors.push(line);
      done();
    },
  });
  const { admin } = await startAdminApp(t, { logger: pino({ level: 'info' }, sink) });
  const host = new URL(admin.url).host;
  const feed = await followEvents(admin.url);
  t.teardown(() => feed.stop());

  const headers = await rawExchange(admin.url, `GET /api/status HTTP/1.1\r\nHost: ${host}\r\nX-Slow: `);
  const body = await rawExchange(admin.url, `POST /api/jobs/email/slow HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${admin.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"data":`);
  t.teardown(() => {
    headers.socket.destroy();
    body.socket.destroy();
  });
  // Well past both limits (10 s for headers, 30 s for a whole request), checked every second.
  const [headersAnswer, bodyAnswer] = await Promise.race([
    Promise.all([headers.closed, body.closed]),
    new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`still open: ${JSON.stringify([headers.received(), body.received()])}`)), 50_000)),
  ]);
  for (const answer of [headersAnswer, bodyAnswer]) {
    t.regex(answer, /^HTTP\/1\.1 408 /);
    t.regex(answer, /"code":"request_timeout"/);
  }

  const before = feed.events.length;
  await eventually(() => feed.events.length > before, 10_000, 'more events on the stream opened before the timeouts');
  t.deepEqual(errors, [], 'a client too slow is not a failure of the server');
});

test('a client too slow with its headers is disconnected after its 408, even if it keeps its side of the socket open', async (t) => {
  const { admin } = await startAdminApp(t);
  const host = new URL(admin.url).host;
  const slow = await rawExchange(admin.url, `GET /api/status HTTP/1.1\r\nHost: ${host}\r\nX-Slow: `, { halfOpen: true });
  t.teardown(() => slow.socket.destroy());
  await new Promise<void>((resolve, reject) => {
    slow.socket.once('end', resolve);
    setTimeout(() => reject(new Error(`no answer: ${JSON.stringify(slow.received())}`)), 30_000);
  });
  t.regex(slow.received(), /^HTTP\/1\.1 408 /);
  // A socket the server has let go of answers more bytes with a reset; one it
  // still holds takes them in silence.
  const reset = new Promise<string>((resolve) => slow.socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message)));
  const writes = setInterval(() => slow.socket.write('X-More: 1\r\n'), 200);
  t.teardown(() => clearInterval(writes));
  const outcome = await Promise.race([reset, new Promise<string>((resolve) => setTimeout(() => resolve('still held'), 5_000))]);
  t.not(outcome, 'still held');
});
