// When the root supervisor jobs_sup ends on its own (killed, or out of
// restart intensity) the application stops, as an OTP application does when
// its top supervisor dies: app.stopped tells why, every call in flight and
// every later one rejects with JobsError `app_stopped`, subscriptions end with
// it, handlers are signalled, an error line is logged and the resources are
// released. With `onRootExit: 'exit'` the process then exits non-zero.

import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { pino } from 'pino';
import { JobsError } from '@jobtree/core';
import { type StartJobsOptions, startJobs } from 'jobtree';
import abortMarker from '../processors/fixtures/abort-marker.js';
import { T1, T2, eventually, restarted, startTempApp } from './fixtures/temp-app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/root-exit-app.ts', import.meta.url));

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

const stoppedCode = { instanceOf: JobsError, code: 'app_stopped' } as const;

test.serial('killing jobs_sup stops the app: app.stopped tells why, calls reject, subscriptions end, handlers are signalled', async (t) => {
  const { lines, logger } = capture();
  const { app, dir } = await startTempApp(t, { logger }, { [T1]: 30, [T2]: 30 });
  await app.process(T1, abortMarker, { interval: 100, threads: 1 });
  await app.add(T1, 'running', { dir });
  // The handler itself runs (taken is not enough: its thread may still be loading it, and a stop ends such a thread unrun).
  await eventually(() => existsSync(join(dir, 'running.running')), 60_000, 'the handler to run');
  const sub = await app.subscribe(T1, 'running');
  const iterated = (async () => {
    for await (const _ of sub) {
      // the iteration ends with the app's stop
    }
  })();
  // Nothing of T2 is pending: this accept waits until the app stops.
  const inFlight = app.accept(T2, { timeout: 60_000 });

  await app.system.kill('jobs_sup');
  const stop = await app.stopped;

  t.is(stop.cause, 'root_exited');
  t.is(stop.reason, 'killed');
  t.regex(stop.message, /jobs_sup/);
  await t.throwsAsync(inFlight, stoppedCode);
  await t.throwsAsync(iterated, stoppedCode);
  await t.throwsAsync(app.add(T1, 'later', {}), stoppedCode);
  await t.throwsAsync(app.subscribe(T1, 'running'), stoppedCode);
  await t.throwsAsync(app.setTypeTimeout(T1, 10), stoppedCode);
  t.throws(() => app.jobs, stoppedCode);
  await eventually(() => existsSync(join(dir, 'running')), 20_000, 'the handler to be signalled');
  t.is(readFileSync(join(dir, 'running'), 'utf8'), 'shutdown');
  const line = lines.find((l) => l.level === 50 && l.reason === 'killed' && /stopped/.test(l.msg));
  t.truthy(line, JSON.stringify(lines.filter((l) => l.level >= 50)));
  // Closing a stopped app is a no-op that succeeds.
  await app.close();
});

test.serial('jobs_sup exceeding its restart intensity (core killed four times) stops the app the same way', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 30 });
  let stopped = false;
  void app.stopped.then(() => {
    stopped = true;
  });
  for (let kill = 0; kill < 4; kill++) {
    const before = app.system.whereis('core');
    await app.system.kill('core');
    if (kill < 3) await restarted(app, 'core', before);
  }
  const stop = await app.stopped;
  t.true(stopped);
  t.is(stop.cause, 'root_exited');
  t.regex(stop.message, /restart intensity/);
  await t.throwsAsync(app.add(T1, 'later', {}), stoppedCode);
});

test.serial('a clean close resolves app.stopped with closed and logs no error', async (t) => {
  const { lines, logger } = capture();
  const { app } = await startTempApp(t, { logger }, { [T1]: 30 });
  await app.close();
  const stop = await app.stopped;
  t.is(stop.cause, 'closed');
  await t.throwsAsync(app.add(T1, 'later', {}), { instanceOf: JobsError, code: 'closed' });
  t.deepEqual(lines.filter((l) => l.level >= 50), []);
});

test('onRootExit is stop or exit; anything else is invalid_option', async (t) => {
  for (const onRootExit of ['restart', 1, null, true]) {
    await t.throwsAsync(startJobs({ path: '/nonexistent/never-opened', onRootExit } as unknown as StartJobsOptions), { instanceOf: JobsError, code: 'invalid_option', message: /onRootExit/ });
  }
});

/** Runs the fixture app in its own process: it kills its own jobs_sup once started. */
function runFixture(dir: string, onRootExit: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, dir, onRootExit], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      output += String(chunk);
    });
    // A guard against a process that never ends, not a measure of speed.
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the fixture app did not end:\n${output}`));
    }, 90_000);
    child.once('exit', (code) => {
      clearTimeout(guard);
      resolve({ code, output });
    });
  });
}

test.serial("with onRootExit 'exit' the process exits non-zero when jobs_sup is killed", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-root-exit-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { code, output } = await runFixture(dir, 'exit');
  t.is(code, 1, output);
  t.regex(output, /"level":50/, 'the reason is logged at error level');
  t.notRegex(output, /still running/);
});

test.serial("with onRootExit 'stop' (the default) the stopped app lets its process end by itself", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-root-exit-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { code, output } = await runFixture(dir, 'stop');
  t.is(code, 0, output);
  t.regex(output, /stopped: root_exited killed/);
});
