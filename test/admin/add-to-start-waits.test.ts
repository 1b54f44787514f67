// The add -> start wait the app reports is measured only for jobs added in
// this process, per type: the same id added under two types is two jobs,
// an add that did not leave its job pending is not waited for, and the add
// times kept are bounded (the oldest go first) without losing the newest.

import test from 'ava';
import { JobActivity } from '../../packages/jobtree/src/admin/job-activity.js';

/** The waits `recordAccepted` reports for `ids` of `type`, accepted now. */
function waitsOf(activity: JobActivity, type: string, ids: readonly string[]): number[] {
  let reported: number[] = [];
  const listener = (_type: string, _count: number, waits: number[]): void => {
    reported = waits;
  };
  activity.events.on('accepted', listener);
  activity.recordAccepted(
    type,
    ids.map((id) => ({ id, lock: `${type}/${id}/${Math.random()}`, scheduledTime: 0 })),
  );
  activity.events.off('accepted', listener);
  return reported;
}

test('the same id added under two types is waited for once in each type', (t) => {
  const activity = new JobActivity();
  activity.adding('a', ['x']);
  activity.adding('b', ['x']);
  t.is(waitsOf(activity, 'a', ['x']).length, 1);
  t.is(waitsOf(activity, 'a', ['x']).length, 0, 'an accept takes the add time away');
  t.is(waitsOf(activity, 'b', ['x']).length, 1);
});

test('an add that did not leave its job pending is not waited for', (t) => {
  const activity = new JobActivity();
  activity.adding('a', ['x', 'y']);
  activity.notAdded('a', ['x']);
  t.is(waitsOf(activity, 'a', ['x', 'y']).length, 1);
  t.is(waitsOf(activity, 'z', ['x']).length, 0, 'a type nothing was added to has no waits');
});

test('past the bound the oldest add times go, across types, and the newest stay', (t) => {
  const activity = new JobActivity();
  activity.adding('old', ['first']);
  const ids = Array.from({ length: 100_000 }, (_, i) => `job-${i}`);
  activity.adding('new', ids);
  t.is(waitsOf(activity, 'old', ['first']).length, 0, 'the oldest add time went');
  t.is(waitsOf(activity, 'new', ['job-0', 'job-99999']).length, 2);
  // Two accepted made room for two: the third add over them is over the bound again.
  activity.adding('new', ['one', 'two', 'three']);
  t.is(waitsOf(activity, 'new', ['job-1']).length, 0, 'over the bound again, the oldest left goes');
  t.is(waitsOf(activity, 'new', ['job-2', 'three']).length, 2);
});
