// A type monitor polls the type's activity only while its notifier has
// subscriptions: every accept and update changes the activity stamp, and a
// poll is a round trip between a host thread and the main thread.

import test from 'ava';
import { Jobs } from '@jobtree/core';
import { T1, startTempApp } from './fixtures/temp-app.js';

/** Counts the activity watches armed on the main thread (each poll of a type monitor arms one) while installed. */
function countActivityWatches(): { readonly count: number; restore(): void } {
  const original = Jobs.prototype.watchActivity;
  const counter = {
    count: 0,
    restore: () => {
      Jobs.prototype.watchActivity = original;
    },
  };
  Jobs.prototype.watchActivity = function (this: Jobs, type: string) {
    if (type === T1) counter.count += 1;
    return original.call(this, type);
  };
  return counter;
}

async function runJob(app: Awaited<ReturnType<typeof startTempApp>>['app'], id: string): Promise<void> {
  await app.add(T1, id, {});
  const job = await app.accept(T1);
  if (job === undefined) throw new Error(`no job to accept for ${id}`);
  await app.finish(job, { done: id });
}

test.serial('a type monitor stops polling once its notifier has no subscription, and resumes with the next one', async (t) => {
  const watches = countActivityWatches();
  t.teardown(() => watches.restore());
  const { app } = await startTempApp(t, {}, { [T1]: 5 });

  // A subscription that ends: the notify that reports `finished` drops it,
  // and the notifier answers that nobody is subscribed any more.
  await app.add(T1, 'first', {});
  const first = await app.subscribe(T1, 'first');
  const job = await app.accept(T1);
  await app.finish(job!, { done: 1 });
  const ended = await app.wait(first, 'finished', 20_000);
  t.not(ended, 'timeout');

  const before = watches.count;
  for (let i = 0; i < 5; i++) await runJob(app, `quiet-${i}`);
  t.is(watches.count, before, 'no poll while nobody is subscribed');

  // A new subscription resumes the monitor; the accept made right after it
  // (before the monitor polls again) is reported.
  await app.add(T1, 'next', {});
  const next = await app.subscribe(T1, 'next');
  const accepted = await app.accept(T1);
  t.not(await app.wait(next, 'running', 20_000), 'timeout');
  await app.finish(accepted!, { done: 2 });
  const finished = await app.wait(next, 'finished', 20_000);
  t.like(finished, { id: 'next', state: 'finished', data: { done: 2 } });
  t.true(watches.count > before, 'the monitor polls again');
});
