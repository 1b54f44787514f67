// An in-process handler that holds the main thread's event loop up is not
// silently tolerated: the app logs a warning naming the job, counts it in
// jobtree_event_loop_blocked_seconds and emits `loop:blocked`.

import { Writable } from 'node:stream';
import test from 'ava';
import type { JobsAppEventTypes } from 'jobtree';
import { pino } from 'pino';
import { eventually, startAdminApp } from './fixtures/admin-app.js';

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

test('a handler that blocks the event loop is logged, counted and emitted, naming its job', async (t) => {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const text of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(text));
      done();
    },
  });
  const { app, admin } = await startAdminApp(t, { logger: pino({ level: 'info' }, sink) }, { busy: 30 });
  const blocked: JobsAppEventTypes['loop:blocked'][0][] = [];
  app.events.on('loop:blocked', (event) => blocked.push(event));
  await app.process('busy', () => {
    const until = performance.now() + 300;
    while (performance.now() < until) {}
    return null;
  });
  await app.add('busy', 'spinner', {});
  await eventually(() => blocked.length > 0, 20_000, 'loop:blocked');
  t.like(blocked[0], { type: 'busy', ids: ['spinner'] });
  t.true((blocked[0]?.lagMs ?? 0) >= 200);
  const line = lines.find((l) => /held the event loop up/.test(l.msg));
  t.like(line, { level: 40, type: 'busy', ids: ['spinner'] });
  t.regex(await admin.metrics(), /^jobtree_event_loop_blocked_seconds_count\{type="busy"\} [1-9]/m);
});
