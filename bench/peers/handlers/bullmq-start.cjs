// BullMQ's sandboxed processor for the first-job and add -> start rows: a
// no-op that reports when it started, as epoch milliseconds (comparable
// across threads), with the job's id.
const { BroadcastChannel } = require('node:worker_threads');

const starts = new BroadcastChannel('jobtree-bench-peers:starts');
starts.unref(); // the thread may end while the channel is open

module.exports = async (job) => {
  starts.postMessage([job.data.id, performance.timeOrigin + performance.now()]);
};
