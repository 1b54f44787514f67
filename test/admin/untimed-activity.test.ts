// Jobs are timed (add -> accept waits, accept -> finish run times) only for
// the metrics, which only an admin endpoint serves: an app without one keeps
// no time per job, and still counts every add, accept and finish.

import test from 'ava';
import { checkOperationsOptions } from '../../packages/jobtree/src/admin/admin-options.js';
import { AppOperations } from '../../packages/jobtree/src/admin/app-operations.js';
import { JobActivity } from '../../packages/jobtree/src/admin/job-activity.js';

test('an untimed activity counts adds, accepts and finishes, and reports no waits or run times', (t) => {
  const activity = new JobActivity({ timed: false });
  const accepted: number[][] = [];
  let ran = 0;
  let finished = 0;
  activity.events.on('accepted', (_type, _count, waits) => accepted.push(waits));
  activity.events.on('ran', () => ran++);
  activity.events.on('finished', (_type, count) => {
    finished += count;
  });
  activity.adding('a', ['x', 'y']);
  activity.recordAdded('a', ['x', 'y']);
  activity.recordAccepted('a', [
    { id: 'x', lock: 'lock-x', scheduledTime: 0 },
    { id: 'y', lock: 'lock-y', scheduledTime: 0 },
  ]);
  activity.recordFinished('a', [
    { id: 'x', lock: 'lock-x', outcome: 'finished' },
    { id: 'y', lock: 'lock-y', outcome: 'failed' },
  ]);
  t.deepEqual(accepted, [[]]);
  t.is(ran, 0);
  t.is(finished, 1);
  t.like(activity.totals().a, { added: 2, accepted: 2, finished: 1, failed: 1 });
});

test('a timed activity reports the wait of each job added here and the run of each job accepted here', (t) => {
  const activity = new JobActivity();
  let waits: number[] = [];
  let runs: number[] = [];
  activity.events.on('accepted', (_type, _count, seen) => {
    waits = seen;
  });
  activity.events.on('ran', (_type, seen) => {
    runs = seen;
  });
  activity.adding('a', ['x']);
  activity.recordAccepted('a', [
    { id: 'x', lock: 'lock-x', scheduledTime: 0 },
    { id: 'z', lock: 'lock-z', scheduledTime: 0 },
  ]);
  activity.recordFinished('a', [{ id: 'x', lock: 'lock-x', outcome: 'finished' }]);
  t.is(waits.length, 1, 'z was not added here');
  t.is(runs.length, 1);
});

test('an app times its jobs only when it serves metrics', (t) => {
  const quiet = new AppOperations(checkOperationsOptions({ logLevel: 'silent' }, undefined));
  const served = new AppOperations(checkOperationsOptions({ logLevel: 'silent', admin: { port: 0 } }, undefined));
  t.false(quiet.activity.timed);
  t.true(served.activity.timed);
});
