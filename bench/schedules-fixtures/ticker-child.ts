// A process of the schedules benchmark: a jobs app on the shared data
// directory (the store's owner or its client), answering its role and
// closing on request. The first one also sets the schedule.

import { startJobs } from 'jobtree';

const [path, setSchedule] = process.argv.slice(2) as [string, string];
const app = await startJobs({ path, threads: 1, logLevel: 'silent', schedulePollMs: 1_000 });
if (setSchedule === 'schedule') {
  await app.setTypeTimeout('tick', 30);
  await app.schedule('every-second', '* * * * * *', { type: 'tick' });
}
process.on('message', (message: string) => {
  if (message === 'role') process.send?.({ role: app.role });
  if (message === 'stop') void app.close().then(() => process.exit(0));
});
process.send?.({ ready: true, role: app.role });
