// An app's rate limits count on the app's clock (`clockSpeed`), as its
// periodic actors and its schedules do: sped up, a window of an hour of
// the app's time passes in a second, and a take held back by the
// rate wakes when it does.

import test from 'ava';
import { startTempApp } from './fixtures/temp-app.js';

test("a take held back by a type's rate wakes when the window passes on the app's clock", async (t) => {
  t.timeout(60_000);
  // An hour of the app's time is one real second (a job's activity timeout: a day).
  const { app } = await startTempApp(t, { clockSpeed: 3_600 }, { report: 86_400 });
  await app.setLimits('report', { rate: { max: 2, perMs: 3_600_000 } });
  await app.addMany('report', Array.from({ length: 3 }, (_, i) => ({ id: `r${i}`, data: { i } })));
  t.truthy(await app.accept('report', { timeout: 0 }));
  t.truthy(await app.accept('report', { timeout: 0 }));
  t.is(await app.accept('report', { timeout: 0 }), undefined, 'two starts in the last hour');
  // On real time this would wait for the hour to pass and end without a job.
  t.truthy(await app.accept('report', { timeout: 10_000 }), 'the hour passed on the app clock');
});
