// The spare jobs a local queue holds for an owner of slots follow the rate
// at which the owner's runs end while it has jobs to run: time it spends
// starved (a slot free, waiting for a take while the store has more) does
// not lower the rate, so late takes do not shrink the spare jobs and make
// the next takes late too; runs that end slowly, or not at all, get none.

import test from 'ava';
import { MAX_ACCEPT_MANY } from '../../packages/core/src/jobs/accept-batcher.js';
import { MAX_SPARE_IN_PROCESS, SpareJobs } from '../../packages/core/src/jobs/spare-jobs.js';

/** A clock the test moves by hand. */
function manualClock() {
  let now = 1_000;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

/**
 * One round of an owner whose runs end every `runMs` while it has jobs:
 * `runs` of them end, then it is starved for `starvedMs` until the next
 * take arrives.
 */
function round(spare: SpareJobs, clock: ReturnType<typeof manualClock>, runs: number, runMs: number, starvedMs: number): void {
  spare.starved(false);
  for (let run = 0; run < runs; run++) {
    clock.advance(runMs);
    spare.ended();
  }
  spare.starved(true);
  clock.advance(starvedMs);
}

test('time starved for a take does not lower the rate: the spare jobs cover two takes at the pace of the runs', (t) => {
  const clock = manualClock();
  const spare = new SpareJobs(clock.now);
  // Runs end every 0.1 ms (10 a ms) while jobs are there; each take of 100
  // jobs then comes 40 ms late. Over time that is 100 runs per 50 ms, 2 a
  // ms: counted so, the queue would hold 2 * 2 * 10 = 40 jobs, fewer than a
  // take's wait uses up.
  for (let rounds = 0; rounds < 40; rounds++) {
    round(spare, clock, 100, 0.1, 40);
    spare.count(10);
  }
  const held = spare.count(10);
  t.true(held >= 150, `${held} spare jobs for takes of 10 ms at 10 runs a ms`);
  t.true(held <= 200, `${held} spare jobs: no more than two takes' worth`);
});

test('quick runs and long takes: the spare jobs reach two whole takes, and no more', (t) => {
  const clock = manualClock();
  const spare = new SpareJobs(clock.now);
  // 20 runs a ms and takes of 80 ms (an accept sent to the owner of a
  // shared store and its jobs sent back): two takes' worth at that pace is
  // 3,200 jobs, more than two takes bring.
  for (let rounds = 0; rounds < 40; rounds++) {
    round(spare, clock, 500, 0.05, 5);
    spare.count(80);
  }
  t.is(spare.count(80), 2 * MAX_ACCEPT_MANY);
});

test('quick runs and long takes from a store this process runs: the spare jobs stop at one take', (t) => {
  const clock = manualClock();
  const spare = new SpareJobs(clock.now);
  // The pace and takes of the test above; an in-process take is that slow
  // only while the event loop is busy with the runs of the jobs held.
  for (let rounds = 0; rounds < 40; rounds++) {
    round(spare, clock, 500, 0.05, 5);
    spare.count(80, true);
  }
  t.is(spare.count(80, true), MAX_SPARE_IN_PROCESS);
  t.is(MAX_SPARE_IN_PROCESS, MAX_ACCEPT_MANY);
  // Below the bound the rate decides, in process or not.
  t.is(spare.count(2, true), spare.count(2));
});

test('runs that end slowly get no spare jobs, and a window with no run ended halves the rate', (t) => {
  const clock = manualClock();
  const spare = new SpareJobs(clock.now);
  spare.starved(false);
  // One run ends every 500 ms: never a spare job for a take of 10 ms.
  for (let run = 0; run < 10; run++) {
    clock.advance(500);
    spare.ended();
    t.is(spare.count(10), 0);
  }
  // Quick runs for a while, then none: the spare jobs shrink window by window.
  for (let run = 0; run < 2_000; run++) {
    clock.advance(0.1);
    spare.ended();
    spare.count(10);
  }
  const busy = spare.count(10);
  t.true(busy > 0);
  clock.advance(60);
  const quiet = spare.count(10);
  t.true(quiet <= busy / 2 + 1, `${busy} then ${quiet} after a quiet window`);
});

test('a window starved throughout keeps the rate it had: a slow take does not empty the spare jobs', (t) => {
  const clock = manualClock();
  const spare = new SpareJobs(clock.now);
  for (let rounds = 0; rounds < 20; rounds++) {
    round(spare, clock, 100, 0.1, 5);
    spare.count(10);
  }
  const before = spare.count(10);
  t.true(before > 0);
  // Still starved after the last round: a take of 300 ms.
  clock.advance(300);
  const after = spare.count(10);
  t.true(Math.abs(after - before) <= before * 0.05, `${before} spare jobs before the slow take, ${after} after`);
});

test('the first runs to end size the spare jobs at once, before a whole window has passed', (t) => {
  const clock = manualClock();
  const spare = new SpareJobs(clock.now);
  // The first take: the owner waits for it, then runs its jobs quickly.
  t.is(spare.count(5), 0);
  clock.advance(20);
  spare.starved(false);
  for (let run = 0; run < 4; run++) {
    clock.advance(0.05);
    spare.ended();
  }
  spare.starved(true);
  clock.advance(1);
  const held = spare.count(5);
  t.true(held >= 100, `${held} spare jobs after 4 runs of 0.05 ms, for takes of 5 ms`);
  t.true(held <= 200, `${held} spare jobs: no more than two takes' worth`);
});

test('quick runs size the spare jobs though the owner is starved most of every window', (t) => {
  const clock = manualClock();
  const spare = new SpareJobs(clock.now);
  // 50 runs of 0.02 ms (50 a ms) in each take, then 49 ms starved for the
  // next: 1 ms of each 50 ms window tells the rate.
  for (let rounds = 0; rounds < 60; rounds++) {
    round(spare, clock, 50, 0.02, 49);
    spare.count(2);
  }
  const held = spare.count(2);
  t.true(held >= 150, `${held} spare jobs for takes of 2 ms at 50 runs a ms`);
  t.true(held <= 200, `${held} spare jobs: no more than two takes' worth`);
});

test('a run that ends just after a late take does not count as a pace the owner keeps: long runs still get no spare jobs', (t) => {
  const clock = manualClock();
  const spare = new SpareJobs(clock.now);
  // Long runs: one ends about every 200 ms while the owner has jobs; each
  // end leaves it starved for a take of 20 ms.
  for (let rounds = 0; rounds < 10; rounds++) {
    round(spare, clock, 1, 180, 20);
    t.is(spare.count(20), 0);
  }
  // Another run happens to end 0.1 ms after a take came: the window was
  // starved all but that long, and its one run tells nothing of a pace of
  // 10 runs a ms.
  round(spare, clock, 1, 0.1, 49.9);
  t.is(spare.count(20), 0);
  // The runs go on at their pace: still none.
  for (let rounds = 0; rounds < 5; rounds++) {
    round(spare, clock, 1, 180, 20);
    t.is(spare.count(20), 0);
  }
});
