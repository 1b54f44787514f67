// The first module of a host thread, in plain JavaScript on purpose: Node 20
// runs `--import tsx` in the main thread only (tsx registers its hooks there
// alone), so a host thread registers tsx itself, by absolute URL, before it
// loads the TypeScript runtime and the actors' `.ts` modules.
import * as workerThreads from 'node:worker_threads';

const { tsxApi, hostModule } = workerThreads.workerData.entry;
const inheritedTsx = process.execArgv.some((arg) => arg.includes('tsx')) && 'isInternalThread' in workerThreads;
if (tsxApi !== undefined && !inheritedTsx) {
  const { register } = await import(tsxApi);
  register();
}
await import(hostModule);
