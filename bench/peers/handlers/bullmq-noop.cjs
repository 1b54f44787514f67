// BullMQ's sandboxed processor for the peer benchmark: a no-op that reports
// the job's id to the main thread (see bench/peers/systems/handler-runs.ts).
// A thread runs one job at a time here, so each message carries one id
// (jobtree's handler sends the ids of a turn of its thread together).
const { BroadcastChannel } = require('node:worker_threads');

const runs = new BroadcastChannel('jobtree-bench-peers:runs');
runs.unref(); // the thread may end while the channel is open

module.exports = async (job) => {
  runs.postMessage([job.data.id]);
};
