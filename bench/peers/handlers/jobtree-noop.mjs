// jobtree's processor handler for the peer benchmark: a no-op that reports
// the job's id to the main thread (see bench/peers/systems/handler-runs.ts),
// the ids of one turn of the thread's event loop in one message: a message
// per job would cost the main thread, which is the busy side, more than the
// runs themselves.
import { BroadcastChannel } from 'node:worker_threads';

const runs = new BroadcastChannel('jobtree-bench-peers:runs');
runs.unref(); // the thread may end while the channel is open
let ran = [];
const report = () => {
  const ids = ran;
  ran = [];
  runs.postMessage(ids);
};

export default async (job) => {
  if (ran.length === 0) setImmediate(report);
  ran.push(job.id);
};
