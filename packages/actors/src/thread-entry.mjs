// The first module of every thread jobtree starts (actor host threads, and
// the handler threads of the jobs application's pool), in plain JavaScript on
// purpose: Node 20 runs `--import tsx` in the main thread only (tsx registers
// its hooks there alone), so a thread started from TypeScript sources
// registers tsx itself, by absolute URL, before it loads its `.ts` module.
// Built JavaScript needs no loader: then `tsxApi` is undefined. The module's
// default export is this module's (piscina calls it for each task).
import * as workerThreads from 'node:worker_threads';

const { tsxApi, module } = workerThreads.workerData.entry;
const inheritedTsx = process.execArgv.some((arg) => arg.includes('tsx')) && 'isInternalThread' in workerThreads;
if (tsxApi !== undefined && !inheritedTsx) {
  const { register } = await import(tsxApi);
  register();
}
const loaded = await import(module);

export default loaded.default;
