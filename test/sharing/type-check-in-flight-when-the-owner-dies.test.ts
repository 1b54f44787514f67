// A client's `app.setTypeTimeout` sets the timeout, then asks the owner to
// check the store's types (which starts the type's activity monitor and
// notifier there). When the owner dies with that check in flight, the check
// is made again on the next owner, as the timeout was: it changes nothing
// twice, and the caller set a timeout, which did not fail.

import { startJobs } from 'jobtree';
import test from 'ava';
import { startDyingOwner } from './fixtures/dying-owner.js';
import { eventually, tempDataDir } from './fixtures/peers.js';

test("a client's setTypeTimeout whose owner dies during the type check resolves, and the type's periodic actors run in the next owner", async (t) => {
  const dir = await tempDataDir(t, 'type-check-in-flight');
  await startDyingOwner(t, dir);
  const app = await startJobs({ path: dir, threads: 1, logLevel: 'silent' });
  t.teardown(() => app.close());
  t.is(app.role, 'client');

  // The owner dies as it is asked to check the types; this process takes the store over.
  await app.setTypeTimeout('render', 30);

  t.is(app.role, 'owner');
  t.is(await app.getTypeTimeout('render'), 30);
  await eventually(
    () => app.system.whereis('notifier:render') !== undefined && app.system.whereis('activity_monitor:render') !== undefined,
    30_000,
    "render's notifier and activity monitor",
  );
});
