// Many accepts of one process (parked, batched, a local queue) and many adds
// (lone, concurrent, addMany, from this handle and from a second one, with
// injected conflicts): every job is accepted exactly once, finished once,
// and none is left pending or running. With writes failing for good now and
// then, accepts of every kind of bound and jobs flagged to run again while
// running, each added job runs as often as it was enqueued, and a job whose
// add failed never runs.

import test from 'ava';
import { checkJobsConsistency, FdbError, FdbErrorCode, LocalQueue, openJobs } from '@jobtree/core';
import type { AcceptOptions, Database, Job, Jobs } from '@jobtree/core';
import { ParkedAccept } from '../../../packages/core/src/jobs/parked-accepts.js';
import { RecordingDatabase } from '../recording-database.js';
import { openTempJobs, T1 } from '../temp-jobs.js';
import { seededRandom } from '../../seeded-random.js';

const JOBS = 600;
/** How long the whole run may take before the test gives up and reports what is missing. */
const GIVE_UP_MS = 90_000;

test('under concurrent adds and accepts with conflicts, every job is accepted and finished exactly once', async (t) => {
  // Counts the accepts served by a write's transaction: the run must exercise the hand-over.
  let handedOver = 0;
  const serve = ParkedAccept.prototype.serve;
  ParkedAccept.prototype.serve = function (this: ParkedAccept, ...args: Parameters<typeof serve>) {
    handedOver += 1;
    return serve.apply(this, args);
  };
  t.teardown(() => {
    ParkedAccept.prototype.serve = serve;
  });
  let raw: Database | undefined;
  let injections = 0;
  // Seeded: the same attempts get the same conflicts run to run (as far as the order of attempts allows).
  const random = seededRandom(12_345);
  const { jobs } = await openTempJobs(t, (inner) => {
    raw = inner;
    return new RecordingDatabase(inner, {
      // Now and then an attempt fails as a conflict would, once it wrote something.
      inject: (stats) => {
        if (stats.writes === 0 || injections >= 150 || random() >= 0.01) return undefined;
        injections += 1;
        return new FdbError(FdbErrorCode.not_committed, 'injected conflict');
      },
    });
  });
  const other: Jobs = await openJobs({ database: raw as Database });
  t.teardown(() => other.close());
  // A long timeout: a held or slow job is never re-enqueued behind the test's back.
  await jobs.setTypeTimeout(T1, 600);

  const accepted = new Map<string, number>();
  const errors: unknown[] = [];
  let finished = 0;
  let done = false;
  let allDone!: () => void;
  const whenAllDone = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  const record = (id: string) => accepted.set(id, (accepted.get(id) ?? 0) + 1);
  const finishedOne = () => {
    finished += 1;
    if (finished >= JOBS) {
      done = true;
      allDone();
    }
  };

  /** `abortAfter`: the accept's signal aborts that many ms after it starts (a worker shutting down at random). */
  const acceptLoop = async (count: number, timeout: () => number, abortAfter?: () => number, from: Jobs = jobs) => {
    while (!done) {
      try {
        let signal: AbortSignal | undefined;
        let abortTimer: NodeJS.Timeout | undefined;
        if (abortAfter !== undefined) {
          const controller = new AbortController();
          signal = controller.signal;
          abortTimer = setTimeout(() => controller.abort(), abortAfter());
        }
        const taken = await from.acceptMany(T1, count, { timeout: timeout(), signal });
        clearTimeout(abortTimer);
        for (const job of taken) record(job.id);
        const outcomes = await from.finishMany(taken.map((job) => ({ job })));
        for (const outcome of outcomes) {
          if (outcome.status === 'fulfilled') finishedOne();
          else errors.push(outcome.reason);
        }
      } catch (error) {
        errors.push(error);
        return;
      }
    }
  };
  const queue = new LocalQueue(jobs, T1, { size: 8, holdMs: 120_000 });
  const queueLoop = async () => {
    while (!done) {
      try {
        const job = await queue.take();
        if (job === undefined) return;
        record(job.id);
        await queue.finish(job);
        finishedOne();
      } catch (error) {
        errors.push(error);
        return;
      }
    }
  };
  const workers = [
    acceptLoop(1, () => 200),
    acceptLoop(1, () => 5_000),
    acceptLoop(1, () => 60_000),
    acceptLoop(4, () => 1_000),
    acceptLoop(16, () => 60_000),
    // Timeouts and aborts that end waits around the adds that serve them.
    acceptLoop(1, () => 1 + Math.floor(random() * 10)),
    acceptLoop(2, () => 60_000, () => Math.floor(random() * 10)),
    acceptLoop(1, () => 3 + Math.floor(random() * 5), () => Math.floor(random() * 6)),
    // Accepts of another process: they take the same older jobs the adds' hand-overs pick.
    acceptLoop(1, () => 50, undefined, other),
    acceptLoop(8, () => 60_000, undefined, other),
    queueLoop(),
    queueLoop(),
  ];

  const producers = async () => {
    let next = 0;
    const id = () => `j${String(next++).padStart(4, '0')}`;
    while (next < JOBS) {
      const shape = random();
      if (shape < 0.3) {
        await jobs.add(T1, id(), { n: next }, { priority: Math.floor(random() * 3) });
      } else if (shape < 0.5) {
        const lone = Array.from({ length: Math.min(JOBS - next, 1 + Math.floor(random() * 5)) }, () => jobs.add(T1, id(), {}));
        await Promise.all(lone);
      } else if (shape < 0.75) {
        const specs = Array.from({ length: Math.min(JOBS - next, 1 + Math.floor(random() * 40)) }, () => ({
          id: id(),
          priority: Math.floor(random() * 3),
          scheduledTime: random() < 0.3 ? Math.floor(Date.now() / 1000) - 100 : undefined,
        }));
        await jobs.addMany(T1, specs);
      } else if (shape < 0.9) {
        await other.add(T1, id(), {});
      } else {
        // Let the workers drain and park.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await producers();

  let timer: NodeJS.Timeout | undefined;
  await Promise.race([whenAllDone, new Promise<void>((resolve) => (timer = setTimeout(resolve, GIVE_UP_MS)))]);
  clearTimeout(timer);
  done = true;
  await queue.stop();
  // Wake the parked accepts of this handle: one last job each loop may take and finish.
  await jobs.close();
  await other.close();
  await Promise.all(workers);

  const twice = [...accepted].filter(([, times]) => times > 1).map(([id]) => id);
  t.deepEqual(twice, [], 'no job accepted twice');
  const missing = Array.from({ length: JOBS }, (_, i) => `j${String(i).padStart(4, '0')}`).filter((id) => !accepted.has(id));
  t.deepEqual(missing, [], 'every job accepted');
  t.deepEqual(errors.filter((error) => !(error instanceof Error && 'code' in error && error.code === 'closed')), []);
  const check = await openJobs({ database: raw as Database });
  t.teardown(() => check.close());
  t.is(await check.pendingCount(T1), 0);
  t.deepEqual(await check.getActiveJobIds(T1), []);
  t.deepEqual((await checkJobsConsistency(raw as Database)).anomalies, []);
  t.true(handedOver > 0, 'some accepts were served by the adds');
  t.log(`injected conflicts: ${injections}, accepts served by a write: ${handedOver}`);
});

test('with writes failing in storage, bounds of every kind and jobs run twice, no job is lost or taken twice', async (t) => {
  let raw: Database | undefined;
  let injections = 0;
  const random = seededRandom(987_654);
  const { jobs } = await openTempJobs(t, (inner) => {
    raw = inner;
    return new RecordingDatabase(inner, {
      // Now and then an attempt fails for good (too large): a shared write
      // transaction runs its calls again alone, an accept rejects.
      inject: (stats) => {
        if (stats.writes < 3 || injections >= 60 || random() >= 0.01) return undefined;
        injections += 1;
        return new FdbError(FdbErrorCode.transaction_too_large, 'injected failure');
      },
    });
  });
  await jobs.setTypeTimeout(T1, 600);
  const now = Math.floor(Date.now() / 1000);
  /** Ids whose add resolved, with how many runs each must get (a job flagged while running runs again). */
  const expected = new Map<string, number>();
  const accepted = new Map<string, number>();
  const flagged = new Set<string>();
  const errors: unknown[] = [];
  let done = false;
  let runs = 0;
  let target = Number.POSITIVE_INFINITY;
  let allDone!: () => void;
  const whenAllDone = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  const ran = () => {
    runs += 1;
    if (runs >= target) allDone();
  };
  const finishOne = async (job: Job) => {
    // Ids ending in 7 run twice: flagged by their creator while running.
    if (job.id.endsWith('7') && !flagged.has(job.id)) {
      for (;;) {
        try {
          await jobs.add(T1, job.id, {});
          flagged.add(job.id);
          break;
        } catch (error) {
          if (!(error instanceof FdbError)) throw error;
        }
      }
    }
    for (;;) {
      try {
        await jobs.finish(job);
        return;
      } catch (error) {
        if (!(error instanceof FdbError)) throw error;
      }
    }
  };
  const worker = async (count: number, options: () => AcceptOptions) => {
    while (!done) {
      let taken: Job[];
      try {
        taken = await jobs.acceptMany(T1, count, options());
      } catch (error) {
        if (error instanceof FdbError) continue;
        if (!(error instanceof Error && 'code' in error && error.code === 'closed')) errors.push(error);
        return;
      }
      for (const job of taken) accepted.set(job.id, (accepted.get(job.id) ?? 0) + 1);
      try {
        for (const job of taken) {
          await finishOne(job);
          ran();
        }
      } catch (error) {
        if (!(error instanceof Error && 'code' in error && error.code === 'closed')) errors.push(error);
        return;
      }
    }
  };
  const workers = [
    worker(1, () => ({ timeout: 60_000 })),
    worker(3, () => ({ timeout: 60_000 })),
    worker(1, () => ({ timeout: 1 + Math.floor(random() * 20) })),
    worker(2, () => ({ timeout: 60_000, noSchedule: true })),
    worker(1, () => ({ timeout: 60_000, maxSchedTime: Date.now() / 1000 + 5 })),
    worker(5, () => ({ timeout: 60_000, maxSchedTime: now + 3_600 })),
  ];
  let next = 0;
  const id = () => `k${String(next++).padStart(4, '0')}`;
  const spec = () => {
    const roll = random();
    // Some jobs due only far ahead: the noSchedule worker (or the far bound) takes them.
    const scheduledTime = roll < 0.1 ? now + 1_800 : roll < 0.2 ? now - 50 : undefined;
    return { id: id(), priority: Math.floor(random() * 3), scheduledTime };
  };
  while (next < JOBS) {
    const shape = random();
    const specs = Array.from({ length: Math.min(JOBS - next, shape < 0.5 ? 1 : 1 + Math.floor(random() * 30)) }, spec);
    const outcomes = await Promise.allSettled(specs.map((s) => jobs.add(T1, s.id, {}, { priority: s.priority, scheduledTime: s.scheduledTime })));
    outcomes.forEach((outcome, index) => {
      const added = specs[index]!;
      if (outcome.status === 'fulfilled') expected.set(added.id, added.id.endsWith('7') ? 2 : 1);
      else if (!(outcome.reason instanceof FdbError)) errors.push(outcome.reason);
    });
    if (random() < 0.2) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  target = [...expected.values()].reduce((sum, n) => sum + n, 0);
  if (runs >= target) allDone();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([whenAllDone, new Promise<void>((resolve) => (timer = setTimeout(resolve, GIVE_UP_MS)))]);
  clearTimeout(timer);
  done = true;
  await jobs.close();
  await Promise.all(workers);

  t.deepEqual(errors, []);
  const wrong = [...new Set([...expected.keys(), ...accepted.keys()])]
    .filter((key) => (accepted.get(key) ?? 0) !== (expected.get(key) ?? 0))
    .map((key) => `${key}: accepted ${accepted.get(key) ?? 0}, expected ${expected.get(key) ?? 0}`);
  t.deepEqual(wrong, [], 'each added job runs as often as it was enqueued; a failed add runs never');
  const check = await openJobs({ database: raw as Database });
  t.teardown(() => check.close());
  t.is(await check.pendingCount(T1), 0);
  t.deepEqual(await check.getActiveJobIds(T1), []);
  t.deepEqual((await checkJobsConsistency(raw as Database)).anomalies, []);
  t.log(`injected failures: ${injections}, jobs added: ${expected.size}, runs: ${runs}`);
});
