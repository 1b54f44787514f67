// The app's logs (pino): crashes, restarts, re-enqueues and restart
// intensity reached, as JSON lines; silent by default under a test runner.

import { Writable } from 'node:stream';
import test from 'ava';
import { pino } from 'pino';
import type { JobsApp } from 'jobtree';
import { eventually, startAdminApp } from './fixtures/admin-app.js';
import idle from './fixtures/idle-actor.js';

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

function capture(): { lines: Line[]; logger: pino.Logger } {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const text of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(text));
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, sink) };
}

test.serial('a killed actor is logged as crashed and its restart as restarted', async (t) => {
  const { lines, logger } = capture();
  const { app } = await startAdminApp(t, { logger });
  const before = app.system.whereis('notifier_sup');
  await app.system.kill('notifier_sup');
  await eventually(() => lines.some((l) => l.msg === 'restarted' && l.child === 'notifier_sup'), 20_000, 'the restart line');
  t.true(lines.some((l) => l.msg === 'crashed' && l.child === 'notifier_sup' && l.reason === 'killed' && l.actor === before && l.level === 40));
  const restart = lines.find((l) => l.msg === 'restarted' && l.child === 'notifier_sup');
  t.like(restart, { level: 40, supervisor: 'jobs_sup', previous: before, component: 'jobtree' });
});

test.serial('re-enqueued jobs are logged with their type and ids', async (t) => {
  const { lines, logger } = capture();
  const { app } = await startAdminApp(t, { logger }, { short: 1 });
  await app.add('short', 'quiet-worker', {});
  await app.accept('short', { timeout: 5_000 });
  await eventually(() => lines.some((l) => /re-enqueued/.test(l.msg)), 30_000, 'the re-enqueue line');
  t.like(lines.find((l) => /re-enqueued/.test(l.msg)), { level: 30, type: 'short', count: 1, ids: ['quiet-worker'] });
});

test.serial('a supervisor reaching its restart intensity is logged as an error', async (t) => {
  const { lines, logger } = capture();
  const { app } = await startAdminApp(t, { logger, userIntensity: 1, userPeriodMs: 60_000 });
  const kill = async (a: JobsApp) => {
    const id = a.system.whereis('idle');
    if (id === undefined) throw new Error('idle is not running');
    await a.system.kill(id);
  };
  await app.system.startActor('idle', idle, undefined, { name: 'idle' });
  await kill(app);
  await eventually(() => app.system.whereis('idle') !== undefined, 20_000, 'the first restart');
  await kill(app);
  await eventually(() => lines.some((l) => /intensity reached/.test(l.msg)), 20_000, 'the intensity line');
  t.like(lines.find((l) => /intensity reached/.test(l.msg)), { level: 50, supervisor: 'user_sup', intensity: 1 });
});

test.serial('logs are silent by default under a test runner', async (t) => {
  const { app } = await startAdminApp(t);
  t.is(app.logger.level, 'silent');
});
