// The module piscina loads in each handler thread, in plain JavaScript on
// purpose: when the scheduler runs from TypeScript sources, the thread must
// register tsx (by absolute URL) before it can load the lane and the user's
// `.ts` handler modules; built JavaScript needs no loader.
import * as workerThreads from 'node:worker_threads';

const { tsxApi, laneModule } = workerThreads.workerData;
const inheritedTsx = process.execArgv.some((arg) => arg.includes('tsx')) && 'isInternalThread' in workerThreads;
if (tsxApi !== undefined && !inheritedTsx) {
  const { register } = await import(tsxApi);
  register();
}
const lane = await import(laneModule);

export default lane.default;
