// jobtree's processor handler for the peer benchmark: a no-op that reports
// the job's id to the main thread (see bench/peers/systems/handler-runs.ts).
import { BroadcastChannel } from 'node:worker_threads';

const runs = new BroadcastChannel('jobtree-bench-peers:runs');
runs.unref(); // the thread may end while the channel is open

export default async (job) => {
  runs.postMessage(job.id);
};
