// The owner of a shared store killed with SIGKILL under load, round after
// round: two adder processes (adding all along, following some of their
// jobs with subscriptions) and two worker processes (app.process, each run
// taking 50 ms, so that a kill cuts some off), one of
// the four owning the store; each round kills whichever owns it then and
// starts a process of the same kind in its place. The guarantees:
//
// - each round, a new owner takes the store over (within a bounded wait);
// - every add that was acknowledged (its promise resolved, in any process,
//   killed ones included) ends finished in the store, by the handler's run
//   that ran last;
// - a job whose finish was acknowledged (to its worker) never runs again;
//   a job runs more than once only when a kill came after the earlier run
//   was taken and before the next run: the earlier run was cut off by it
//   (its process died, or its finish went down with the owner), and the job
//   came back through the activity monitor. A run may start a while after
//   its job was taken (held by its worker, up to half the activity timeout,
//   and waiting for a thread that is still loading the handler): a kill up
//   to two activity timeouts before the earlier run started counts;
// - the subscriptions of the processes still alive at the end all end with
//   a terminal event or a typed error (`owner_lost`, after which they
//   subscribe again), none still waiting after a bounded wait.
//
// 3 rounds by default, so that the suite stays fast; SHARING_KILL_ROUNDS=20
// runs the size the feature is specified at.

import { join } from 'node:path';
import { openJobs } from '@jobtree/core';
import test from 'ava';
import { LoadProcess, type LoadRecords, exactlyOnceProblems, readRecords } from './fixtures/load-fleet.js';
import { PEER_START_MS, bounded, eventually, tempDataDir } from './fixtures/peers.js';

const ROUNDS = Number(process.env.SHARING_KILL_ROUNDS ?? 3);
/** The type's activity timeout, in seconds: a run cut off by a kill comes back within about two of them. */
const TIMEOUT_S = 4;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const runCount = (records: LoadRecords): number => [...records.runs.values()].reduce((sum, runs) => sum + runs.length, 0);

test(`the owner killed (SIGKILL) under load, ${ROUNDS} rounds: a new owner each round, every acknowledged add finished once, subscriptions end`, async (t) => {
  t.timeout(60_000 + ROUNDS * 30_000);
  const dir = await tempDataDir(t, 'owner-killed');
  const path = join(dir, 'store');
  const recordDir = join(dir, 'records');
  let adders = 0;
  const start = (mode: 'adder' | 'worker'): LoadProcess =>
    LoadProcess.spawn(t, {
      mode,
      path,
      recordDir,
      args:
        mode === 'adder'
          ? ['--prefix', `p${adders++}-`, '--window', '4', '--follow-every', '10', '--timeout', String(TIMEOUT_S)]
          : ['--max-jobs', '20', '--run-ms', '50', '--timeout', String(TIMEOUT_S)],
    });
  const live = new Set<LoadProcess>();
  const killed = new Set<LoadProcess>();
  /**
   * Waits for a started process to be ready, then sets it adding if it is an
   * adder. One still starting may own the store already (it took the lock
   * while the owner before it was being replaced) and be killed as such.
   */
  const admit = async (member: LoadProcess): Promise<void> => {
    live.add(member);
    try {
      member.role = (await member.next('ready', PEER_START_MS)).role;
    } catch (error) {
      if (killed.has(member)) return;
      throw error;
    }
    if (member.mode === 'adder') member.send('go');
  };
  // The first to start owns the store at first (a worker); after each kill, whichever process takes the lock does.
  await admit(start('worker'));
  await Promise.all([admit(start('worker')), admit(start('adder')), admit(start('adder'))]);

  // Reads through a client that never takes the store over: it tells who owns the store now.
  const observer = await openJobs({ path, role: 'client', ownerWaitMs: 30_000 });
  t.teardown(() => observer.close());
  const joining: Promise<void>[] = [];
  const kills: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Load for a while: adds acknowledged and handlers running (a worker's threads take seconds to load the handler at first).
    const before = readRecords(recordDir);
    await eventually(
      () => {
        const now = readRecords(recordDir);
        return now.acked.size >= before.acked.size + 20 && runCount(now) >= runCount(before) + 20;
      },
      30_000,
      `adds acknowledged and jobs run in round ${round + 1}`,
    );
    await sleep(200 + Math.floor(Math.random() * 800));
    await observer.getTypes();
    const ownerPid = observer.ownerPid;
    const owner = [...live].find((member) => member.pid === ownerPid);
    if (owner === undefined) throw new Error(`round ${round + 1}: the owner ${ownerPid} is none of the test's processes`);
    kills.push(Date.now());
    killed.add(owner);
    await owner.kill();
    live.delete(owner);
    t.log(`round ${round + 1}: killed the owner, ${owner.mode} ${owner.pid}`);
    joining.push(admit(start(owner.mode)));
    // A new owner takes over, one of the processes alive.
    await eventually(
      async () => {
        await observer.getTypes();
        return observer.ownerPid !== ownerPid && [...live].some((member) => member.pid === observer.ownerPid);
      },
      30_000,
      `a new owner after round ${round + 1}`,
    );
  }
  await Promise.all(joining);

  // The end: adding stops, and every acknowledged job must end finished (a run cut off by the last kill comes back within two timeouts).
  const adding = [...live].filter((member) => member.mode === 'adder');
  for (const adder of adding) adder.send('stop-adding');
  for (const adder of adding) await adder.next('added', 30_000);
  const acked = [...readRecords(recordDir).acked];
  await eventually(
    async () => (await observer.getJobStates('load', acked)).every((entry) => entry.state === 'finished'),
    30_000 + 3 * TIMEOUT_S * 1000,
    'every acknowledged job to be finished',
  );
  // The surviving adders' subscriptions end (their jobs are finished): none left waiting.
  for (const adder of adding) adder.send('settle');
  const settled = await Promise.all(adding.map((adder) => adder.next('settled', 30_000)));
  t.deepEqual(
    settled.flatMap((report) => report.open),
    [],
    'subscriptions still waiting after the jobs finished',
  );
  await observer.close();
  await bounded(Promise.all([...live].map((member) => member.stop())), 60_000, 'the processes to stop');

  const jobs = await openJobs({ path });
  const infos = await jobs.getJobs('load').finally(() => jobs.close());
  const records = readRecords(recordDir);
  const reran = [...records.runs.values()].filter((runs) => runs.length > 1).length;
  const killedPids = new Set([...killed].map((member) => String(member.pid)));
  const runsInKilled = [...records.runs.values()].flat().filter((run) => killedPids.has(run.token.split('.')[0]!)).length;
  const follows = [...records.follows.values()];
  const lost = follows.filter((outcomes) => outcomes.some((end) => end.outcome === 'lost')).length;
  const toFinish = follows.map((outcomes) => outcomes.at(-1)?.ms ?? 0).sort((a, b) => a - b);
  t.log(
    `${records.acked.size} adds acknowledged, ${records.failed.length} rejected (${[...new Set(records.failed.map((failure) => failure.code))].join(', ') || 'none'}); ${runsInKilled} runs in processes killed later; ${reran} jobs ran again after a kill; ${records.follows.size} jobs followed (to their end in ${toFinish[Math.floor(toFinish.length / 2)] ?? '-'} ms at the median, ${toFinish.at(-1) ?? '-'} at most), ${lost} of them through an owner_lost`,
  );
  t.true(records.acked.size > 0);
  t.deepEqual(exactlyOnceProblems(records, infos, kills, 2 * TIMEOUT_S * 1000).slice(0, 20), []);
  // An add rejects only with the typed, retryable error of an owner gone for longer than ownerWaitMs.
  t.deepEqual(
    records.failed.filter((failure) => failure.code !== 'owner_lost'),
    [],
  );
  // Every subscription came to `finished`, or ended with `owner_lost` and was made again: none with another error or state.
  t.deepEqual(
    [...records.follows].filter(([, outcomes]) => outcomes.some((end) => end.outcome !== 'finished' && end.outcome !== 'lost')),
    [],
  );
});
