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
