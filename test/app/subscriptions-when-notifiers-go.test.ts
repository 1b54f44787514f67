// What a subscription does when its notifier goes away for good, and many
// subscribes waiting for one notifier at once.

import test from 'ava';
import { JobsError } from 'jobtree';
import { T1, eventually, startTempApp } from './fixtures/temp-app.js';

test.serial('a subscription whose type loses its timeout ends with unavailable at once, not at the resubscribe deadline', async (t) => {
  // A deadline longer than the test's own timeout: only an end that does not wait for it passes.
  const { app } = await startTempApp(t, { resubscribeTimeoutMs: 600_000 });
  await app.add(T1, 'j1', {});
  const sub = await app.subscribe(T1, 'j1');
  const timeoutReads = { count: 0 };
  const getTypeTimeout = app.jobs.getTypeTimeout.bind(app.jobs);
  app.jobs.getTypeTimeout = async (type: string) => {
    timeoutReads.count += 1;
    return getTypeTimeout(type);
  };
  await app.clearTypeTimeout(T1);
  const error = await t.throwsAsync(app.wait(sub, undefined, 600_000), { instanceOf: JobsError });
  t.is(error?.code, 'unavailable');
  t.regex(error?.message ?? '', /no timeout/);
  t.true(sub.ended);
  t.true(timeoutReads.count < 10, `the type's timeout was read ${timeoutReads.count} times: nothing polls for a notifier`);
});

test.serial('twenty subscribes waiting at once for a killed notifier\'s successor raise no listener-leak warning', async (t) => {
  const { app } = await startTempApp(t);
  const warnings: string[] = [];
  const onWarning = (warning: Error): void => {
    warnings.push(`${warning.name}: ${warning.message}`);
  };
  process.on('warning', onWarning);
  t.teardown(() => process.off('warning', onWarning));
  const ids = Array.from({ length: 20 }, (_, i) => `j${i}`);
  for (const id of ids) await app.add(T1, id, {});
  await app.system.kill(`notifier:${T1}`);
  const subs = await Promise.all(ids.map((id) => app.subscribe(T1, id)));
  t.deepEqual(
    subs.map((sub) => sub.state),
    ids.map(() => 'pending'),
  );
  // Warnings are emitted on the next turn.
  await eventually(() => true, 100);
  await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(warnings.filter((warning) => warning.includes('MaxListeners')), []);
});
