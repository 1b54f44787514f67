// jobtree's processor handler for the first-job and add -> start rows when
// handlers run in threads: a no-op that reports when it started, as epoch
// milliseconds (comparable across threads), with the job's id.
import { BroadcastChannel } from 'node:worker_threads';

const starts = new BroadcastChannel('jobtree-bench-peers:starts');
starts.unref(); // the thread may end while the channel is open

export default async (job) => {
  starts.postMessage([job.id, performance.timeOrigin + performance.now()]);
};
