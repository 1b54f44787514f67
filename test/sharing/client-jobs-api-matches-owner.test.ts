// openJobs in two processes on one embedded store: the second process is a
// client of the first, and its jobs API answers as the owner's does, values
// and typed errors alike. What needs the store's transactions in this
// process (`in(tx)`, `database`) is refused in a client with `not_owner`;
// `role` tells the two apart, and asking for one role is honoured.

import { DatabaseLockedError, JobsError, openJobs } from '@jobtree/core';
import test from 'ava';
import { jobsApiScenario } from './fixtures/jobs-api-scenario.js';
import { bounded, ownerPidOf, Peer, tempDataDir } from './fixtures/peers.js';

const SCENARIO = new URL('./fixtures/jobs-api-scenario.ts', import.meta.url).href;

test('a client gets the same values and the same typed errors as the owner from every jobs call', async (t) => {
  const alone = await tempDataDir(t, 'api-owner');
  const shared = await tempDataDir(t, 'api-shared');
  // The owner of the shared store starts while this process runs the scenario as the owner of its own.
  const starting = Peer.start(t, { kind: 'jobs', path: shared });
  starting.catch(() => {}); // awaited below; a failure is reported there
  const jobs = await openJobs({ path: alone });
  t.teardown(() => jobs.close());
  t.is(jobs.role, 'owner');
  const asOwner = await jobsApiScenario(jobs);
  // A method missing from a handle would fail alike on both sides: every failure must be the API's own,
  // and the runs' ends must have happened.
  t.deepEqual(
    Object.entries(asOwner).filter(([, outcome]) => 'error' in outcome && outcome.error.className !== 'JobsError'),
    [],
  );
  t.deepEqual(asOwner.complete, { value: 'finished' });
  t.deepEqual(asOwner.getTypeLimits, { value: { concurrency: 3, rate: { max: 10, perMs: 1_000 } } });
  t.like(asOwner['setTypeLimits with a bad concurrency'], { error: { code: 'invalid_limits' } });
  t.deepEqual(asOwner['getTypeLimits after they were lifted'], { value: undefined });
  t.deepEqual(asOwner['getTypeLimits per group'], { value: { group: { concurrency: 1 } } });
  t.like(asOwner['add with a bad group'], { error: { code: 'invalid_group' } });
  t.deepEqual(asOwner['acceptMany under group limits: one job per group'], { value: ['g1:tenant-1', 'g3:tenant-2'] });
  t.like(asOwner['accept after failAttempt: the attempt counted'], { value: { id: 'o2', attempts: 1 } });
  t.deepEqual(asOwner['fail with an Error of its own class'], { value: 'finished' });
  t.like(asOwner['getJob of a failed job'], { value: { outcome: 'failed', data: { n: 4 }, error: { name: 'TypeError', message: 'bad address' } } });
  t.deepEqual(asOwner['cancel a running job'], { value: true });
  t.deepEqual(asOwner['watchCancellations: the running jobs removed or cancelled so far'], { value: 1 });
  t.deepEqual(asOwner['the cancellation watch fires'], { value: true });
  t.deepEqual(asOwner['watchCancellations after the cancel'], { value: 2 });
  t.like(asOwner['watchCancellations of a bad type'], { error: { code: 'invalid_job_type' } });
  t.deepEqual(asOwner['retry a failed job'], { value: undefined });
  t.like(asOwner['retry a succeeded job'], { error: { code: 'not_retryable' } });
  const ids = (step: string): unknown => ((asOwner[step] as { value: { id: string }[] }).value ?? []).map((job) => job.id);
  t.deepEqual(ids('getJobs that failed'), ['o2', 'o4']);
  t.like(asOwner['pruneFinished: succeeded jobs past a count of 0, one a call'], { value: { removed: 1, indexed: 0, more: true } });
  t.deepEqual(asOwner['pruneFinished: failed jobs kept forever'], { value: { removed: 0, indexed: 0, more: false } });
  t.deepEqual(asOwner['pruneFinished: cancelled jobs a day old'], { value: { removed: 0, indexed: 0, more: false } });
  for (const bad of ['a bad outcome', 'a bad limit', 'an unknown limit', 'a bad batch size']) {
    t.like(asOwner[`pruneFinished with ${bad}`], { error: { className: 'JobsError', code: 'invalid_option' } }, bad);
  }
  t.like(asOwner['pruneFinished with a bad type'], { error: { className: 'JobsError', code: 'invalid_job_type' } });
  const retry = { attempts: 4, backoff: { type: 'exponential', delayMs: 500, maxDelayMs: 8_000, jitter: 0.2 }, maxRunMs: 1_000 };
  t.like(asOwner['getJob with a retry policy'], { value: { id: 'r1', data: { n: 1 }, retry } });
  t.like(asOwner['accept: the retry policy on the handle'], { value: { id: 'r1', retry } });
  t.like(asOwner['add with a backoff function as retry policy'], { error: { code: 'invalid_option' } });
  t.like(asOwner['add with a bad retry policy'], { error: { code: 'invalid_option' } });
  t.deepEqual(asOwner.isPaused, { value: true });
  t.like(asOwner['pause of a bad type'], { error: { code: 'invalid_job_type' } });
  t.deepEqual(asOwner.getPausedTypes, { value: [{ type: 'paused', pausedAt: 'number' }] });
  t.deepEqual(asOwner['add to a paused type'], { value: 'pending' });
  t.deepEqual(asOwner['accept of a paused type'], { value: undefined });
  t.deepEqual(asOwner['acceptMany of a paused type'], { value: [] });
  t.deepEqual(asOwner['isPaused after resume'], { value: false });
  t.like(asOwner['accept after resume'], { value: { id: 'p1' } });
  t.like(asOwner.setSchedule, { value: { name: 'nightly', lastTick: null } });
  t.like(asOwner['setSchedule with a bad spec'], { error: { code: 'invalid_schedule' } });
  t.like(asOwner['setSchedule with a bad backfill'], { error: { code: 'invalid_schedule' } });
  t.deepEqual(asOwner.addScheduleTicks, { value: ['nightly@2026-01-05T10:00:01.000Z'] });
  t.deepEqual(asOwner['addScheduleTicks again'], { value: [] });
  t.deepEqual(asOwner['addScheduleTicks of a stale setting'], { value: undefined });
  t.like(asOwner["a tick's job"], { value: { state: 'pending', data: { n: 1 } } });
  t.deepEqual(asOwner.removeSchedule, { value: true });
  t.deepEqual(asOwner['removeSchedule again'], { value: false });
  t.deepEqual(asOwner.addFlow, { value: 'waiting' });
  t.like(asOwner['addFlow with a job twice'], { error: { className: 'JobsError', code: 'invalid_flow' } });
  t.like(asOwner['addFlow of a job that exists'], { error: { className: 'JobsError', code: 'flow_job_exists' } });
  t.like(asOwner['addFlow with a function as data'], { error: { className: 'JobsError', code: 'invalid_job_data' } });
  t.deepEqual(asOwner['getJobState of a waiting parent'], { value: 'waiting' });
  t.deepEqual(asOwner['complete the child'], { value: 'finished' });
  t.deepEqual(asOwner['getJobState of the parent after its child'], { value: 'pending' });
  t.deepEqual(asOwner.getChildren, { value: [{ type: 'part', id: 'p1', state: 'finished', outcome: 'succeeded', result: { rows: 3 } }] });
  t.like(asOwner.getFlow, { value: { type: 'report', id: 'r', state: 'pending', onChildFailure: 'fail', unfinished: 0, children: [{ id: 'p1', outcome: 'succeeded' }] } });
  t.deepEqual(asOwner['getFlow of a job in no flow'], { value: undefined });

  const owner = await starting;
  const client = await Peer.start(t, { kind: 'jobs', path: shared });
  t.is(owner.role, 'owner');
  t.is(client.role, 'client');
  const asClient = await client.run<Record<string, unknown>>(`const { jobsApiScenario } = await lib.import(${JSON.stringify(SCENARIO)}); return jobsApiScenario(jobs);`);
  t.deepEqual(asClient, asOwner);
  // The client's writes are in the owner's store.
  t.deepEqual(await owner.run(`return (await jobs.getJobs('mail')).map((job) => job.id + ':' + job.state)`), (await jobs.getJobs('mail')).map((job) => `${job.id}:${job.state}`));
});

test('in(tx) and database throw JobsError not_owner in a client, and work in the owner', async (t) => {
  const dir = await tempDataDir(t, 'api-not-owner');
  const owner = await Peer.start(t, { kind: 'jobs', path: dir });
  const client = await openJobs({ path: dir });
  t.teardown(() => client.close());
  t.is(client.role, 'client');
  t.is(ownerPidOf(client), owner.pid);
  const fakeTx = { get: () => undefined };
  t.throws(() => client.in(fakeTx as never), { instanceOf: JobsError, code: 'not_owner', message: new RegExp(`process ${owner.pid} owns the store`) });
  t.throws(() => client.database, { instanceOf: JobsError, code: 'not_owner' });
  // In the owner, the same calls run in the application's transaction.
  const added = await owner.run(`
    await jobs.setTypeTimeout('mail', 30);
    return jobs.database.doTransaction((tx) => jobs.in(tx).add('mail', 'in-tx', { n: 1 }));
  `);
  t.is(added, 'pending');
  t.is(await client.getJobState('mail', 'in-tx'), 'pending');
});

test("role 'owner' with a live owner rejects with DatabaseLockedError; role 'client' never takes the lock", async (t) => {
  const dir = await tempDataDir(t, 'api-roles');
  // No owner at all: a client waits its ownerWaitMs for one, and never owns the store itself.
  await t.throwsAsync(openJobs({ path: dir, role: 'client', ownerWaitMs: 200 }), { instanceOf: JobsError, code: 'owner_lost' });

  const first = await Peer.start(t, { kind: 'jobs', path: dir });
  t.is(first.role, 'owner');
  const error = await t.throwsAsync(openJobs({ path: dir, role: 'owner', ownerWaitMs: 200 }), { instanceOf: DatabaseLockedError });
  t.is(error?.ownerPid, first.pid);

  const client = await openJobs({ path: dir, role: 'client', ownerWaitMs: 60_000 });
  t.teardown(() => client.close());
  t.is(client.role, 'client');
  await client.setTypeTimeout('mail', 30);
  await client.add('mail', 'before', {});

  // The owner goes: a client by choice waits for the next owner instead of taking the store.
  await first.closeAndExit();
  const reading = client.getJobState('mail', 'before');
  const second = await Peer.start(t, { kind: 'jobs', path: dir });
  t.is(second.role, 'owner');
  t.is(await bounded(reading, 30_000, 'the read to reach the next owner'), 'pending');
  t.is(client.role, 'client');
  t.is(ownerPidOf(client), second.pid);
  t.is(await second.run(`return jobs.getJobState('mail', 'before')`), 'pending');
});
