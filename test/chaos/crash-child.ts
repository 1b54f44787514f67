// The app of the kill -9 loop, run in a child process: a jobs app on the
// loop's data directory with worker actors, a main-thread worker, an adder
// and subscribers, all recording into the loop's history file. `--mode
// load` runs until it is killed, or, told SIGTERM, stops its load, lets its
// subscriptions end (within a bounded wait), closes its app and exits;
// `--mode drain` adds nothing, follows every unfinished job, and exits once
// no job is pending or running. It prints `role owner|client` once its
// store is open, then `ready`; a client that takes the store over (the
// owner died) prints `took over`. `--client N` names a client of a round
// (its job ids, worker and subscription numbers, from `--subs-from`).
//
//   node --import tsx test/chaos/crash-child.ts --path DIR --history FILE --seed N --round R --mode load|drain [--client N --subs-from S]

import { parseArgs } from 'node:util';
import { startJobs } from 'jobtree';
import { CRASH_TYPE, SUBS_PER_ROUND } from './crash-loop.js';
import chaosWorker from './fixtures/chaos-worker.js';
import { HistoryLog } from './history.js';
import { Prng } from './prng.js';
import { Adder, MainWorker, Subscribers } from './workload.js';


const { values } = parseArgs({
  options: {
    path: { type: 'string' },
    history: { type: 'string' },
    seed: { type: 'string' },
    round: { type: 'string' },
    mode: { type: 'string', default: 'load' },
    jobs: { type: 'string', default: '60' },
    client: { type: 'string' },
    'subs-from': { type: 'string' },
  },
});
const path = values.path!;
const historyPath = values.history!;
const seed = Number(values.seed);
const round = Number(values.round);
const client = values.client;
const prng = new Prng(seed).fork(client === undefined ? `round-${round}` : `round-${round}-client-${client}`);
/** What this process's job ids and worker name start with: its round's, and its own among the round's clients. */
const name = client === undefined ? `r${round}` : `r${round}c${client}`;
const log = new HistoryLog(historyPath);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

log.record({ op: 'restart', by: 'harness', detail: `round ${round} ${values.mode}` });
// The loop reads every acknowledged job back from the store: many rounds
// (--kills) finish more jobs than the default retention keeps.
const app = await startJobs({
  path,
  threads: 1,
  typeMonitorHoldoffMs: 20,
  activityMonitorMaxJitterMs: 50,
  resubscribeTimeoutMs: 15_000,
  userIntensity: 100,
  userPeriodMs: 1_000,
  retention: false,
});
process.stdout.write(`role ${app.role}\n`);
if (app.role === 'client') {
  const tookOver = setInterval(() => {
    if (app.role !== 'owner') return;
    clearInterval(tookOver);
    process.stdout.write('took over\n');
  }, 20);
  tookOver.unref();
}
await app.setTypeTimeout(CRASH_TYPE, 1);
for (let i = 0; i < 2; i++) {
  await app.system.startActor(`worker-${i}`, chaosWorker, { type: CRASH_TYPE, name: `worker-${i}`, historyPath, seed, maxUpdates: 2, maxStepMs: 30 }, { name: `worker-${i}` });
}
const main = new MainWorker(app, log, prng.fork('main'), { types: [CRASH_TYPE], name: `main-${name}`, maxUpdates: 2, maxStepMs: 30 });
const subscribers = new Subscribers(app, log, values['subs-from'] === undefined ? round * SUBS_PER_ROUND + 1 : Number(values['subs-from']));

if (values.mode === 'drain') {
  for (const job of await app.getJobs(CRASH_TYPE)) if (job.state !== 'finished') subscribers.follow(CRASH_TYPE, job.id);
  process.stdout.write('ready\n');
  const deadline = Date.now() + 120_000;
  let drained = false;
  while (Date.now() < deadline) {
    if ((await app.pendingCount(CRASH_TYPE)) === 0 && (await app.getActiveJobIds(CRASH_TYPE)).length === 0) {
      drained = true;
      break;
    }
    await sleep(100);
  }
  await subscribers.settle(20_000);
  subscribers.freeze();
  await main.stop();
  await app.close();
  log.close();
  process.stdout.write(drained ? 'drained\n' : 'drain timed out\n');
  process.exit(drained ? 0 : 3);
} else {
  const follow = prng.fork('follow');
  const adder = new Adder(app, log, prng.fork('adder'), {
    types: [CRASH_TYPE],
    prefix: `${name}-`,
    everyMs: 15,
    max: Number(values.jobs),
    removeChance: 0.02,
    onAdded: (type, id) => {
      if (follow.chance(0.25)) subscribers.follow(type, id);
    },
  });
  adder.start();
  // A clean stop: what the loop does to the clients that outlived their owner.
  process.once('SIGTERM', () => {
    void (async () => {
      await adder.stop();
      await main.stop();
      await subscribers.settle(20_000);
      subscribers.freeze();
      await app.close();
      log.close();
      process.stdout.write('stopped\n');
      process.exit(0);
    })();
  });
  process.stdout.write('ready\n');
  // Runs until the loop kills it with SIGKILL, or stops it with SIGTERM.
}
