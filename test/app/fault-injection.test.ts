// Fault injection on the jobs tree: kill each system actor by name and check
// that what OTP's rest_for_one/one_for_one say restarts, restarts, that the
// rest keeps its ids, and that the app keeps working afterwards.

import test from 'ava';
import type { JobsApp } from 'jobtree';
import spinner from './fixtures/spinner.js';
import { T1, eventually, restarted, startTempApp } from './fixtures/temp-app.js';

const ORDER = ['core', 'user_sup', 'activity_monitor_sup', 'notifier_sup', 'jobs_server', 'schedule_ticker'] as const;

function ids(app: JobsApp): Record<string, string | undefined> {
  const names = [...ORDER, 'jobs_sup', `activity_monitor:${T1}`, `notifier:${T1}`, `type_monitor:${T1}`];
  return Object.fromEntries(names.map((name) => [name, app.system.whereis(name)]));
}

/** The app still runs jobs and delivers events end to end. */
async function works(app: JobsApp, id: string): Promise<void> {
  await app.add(T1, id, { n: 1 });
  const sub = await app.subscribe(T1, id);
  const job = await app.accept(T1, { timeout: 5_000 });
  if (job === undefined) throw new Error('no job accepted');
  await app.finish(job, { ok: true });
  const event = await app.wait(sub, 'finished', 10_000);
  if (event === 'timeout' || event.state !== 'finished') throw new Error(`no finished event: ${JSON.stringify(event)}`);
}

for (const [index, name] of ORDER.entries()) {
  test.serial(`killing ${name} restarts it and every younger sibling (rest_for_one); older ones keep their ids`, async (t) => {
    const { app } = await startTempApp(t, {}, { [T1]: 5 });
    const before = ids(app);
    await app.system.kill(name);
    for (const younger of ORDER.slice(index)) await restarted(app, younger, before[younger]);
    // The per-type children come back once a restarted jobs_server has re-created them; the ticker after it restarts alone.
    const perType = [`notifier:${T1}`, `activity_monitor:${T1}`];
    if (index <= ORDER.indexOf('jobs_server')) for (const child of perType) await restarted(app, child, before[child]);
    const after = ids(app);
    if (index > ORDER.indexOf('jobs_server')) for (const child of perType) t.is(after[child], before[child], `${child} keeps its id`);
    for (const older of ORDER.slice(0, index)) t.is(after[older], before[older], `${older} keeps its id`);
    t.is(after.jobs_sup, before.jobs_sup, 'the root survives');
    // The supervisor's restart event may come a moment after the new actor registered.
    const restarts = () => app.system.tree().children.find((child) => child.name === name)?.restarts;
    await eventually(() => restarts() === 1, 10_000, `${name}'s restart counted`).catch(() => {});
    t.is(restarts(), 1);
    await works(app, `after-${name}`);
    t.pass();
  });
}

for (const name of [`activity_monitor:${T1}`, `notifier:${T1}`, `type_monitor:${T1}`]) {
  test.serial(`killing ${name} makes jobs_server re-create the per-type children; the supervisors keep their ids`, async (t) => {
    const { app } = await startTempApp(t, {}, { [T1]: 5 });
    const before = ids(app);
    await app.system.kill(name);
    await restarted(app, 'jobs_server', before.jobs_server);
    await restarted(app, name, before[name]);
    const after = ids(app);
    for (const kept of ['jobs_sup', 'core', 'user_sup', 'activity_monitor_sup', 'notifier_sup']) t.is(after[kept], before[kept]);
    await works(app, `after-${name}`);
    t.pass();
  });
}

test.serial('a subscriber whose notifier is killed still gets its events and the terminal one', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  await app.add(T1, 'j', { a: 1 });
  const sub = await app.subscribe(T1, 'j');
  const job = await app.accept(T1);
  t.like(await app.wait(sub, 'running', 10_000), { state: 'running' });
  const notifier = app.system.whereis(`notifier:${T1}`);
  await app.system.kill(`notifier:${T1}`);
  // Finished while no notifier runs: the resubscription reports it.
  await app.finish(job!, { done: true });
  t.like(await app.wait(sub, 'finished', 15_000), { state: 'finished', data: { done: true } });
  t.not(app.system.whereis(`notifier:${T1}`), notifier);
});

test.serial('a subscription survives repeated notifier kills and still ends with finished', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  await app.add(T1, 'j', {});
  const sub = await app.subscribe(T1, 'j');
  const states: string[] = [];
  const reading = (async () => {
    for await (const event of sub) states.push(event.state);
  })();
  let job = (await app.accept(T1))!;
  for (let round = 0; round < 3; round++) {
    const before = app.system.whereis(`notifier:${T1}`);
    await app.system.kill(`notifier:${T1}`);
    await restarted(app, `notifier:${T1}`, before);
    job = await app.update(job, { round });
  }
  await app.finish(job);
  await reading;
  t.is(states.at(-1), 'finished');
});

test.serial('killing notifier_sup restarts it and jobs_server; activity_monitor_sup keeps its id', async (t) => {
  const { app } = await startTempApp(t, {}, { [T1]: 5 });
  const before = ids(app);
  await app.system.kill('notifier_sup');
  await restarted(app, 'notifier_sup', before.notifier_sup);
  await restarted(app, 'jobs_server', before.jobs_server);
  await restarted(app, `notifier:${T1}`, before[`notifier:${T1}`]);
  t.is(app.system.whereis('activity_monitor_sup'), before.activity_monitor_sup);
  t.is(app.system.whereis('core'), before.core);
  await works(app, 'after-notifier-sup');
});

test.serial('a host thread dying under 100 types does not bring jobs_sup down', async (t) => {
  const types = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`type-${i}`, 30]));
  const { app } = await startTempApp(t, { killTimeoutMs: 200, threads: 2 }, types);
  t.true(app.system.threads().length <= 4, `${app.system.threads().length} threads for 100 types`);
  const root = app.system.whereis('jobs_sup');
  const server = app.system.whereis('jobs_server');
  // A user actor stuck in a synchronous loop: killing it terminates its thread, and every co-hosted jobs actor dies too.
  const ref = await app.system.startActor('spinner', spinner, undefined, { name: 'spinner' });
  const thread = app.system.actors.threadOf(ref)!;
  const victims = Object.keys(types).filter((type) => app.system.actors.threadOf(`notifier:${type}`) === thread);
  t.true(victims.length > 0, 'some notifiers share the spinner thread');
  app.system.cast(ref, 'spin');
  await new Promise((resolve) => setTimeout(resolve, 100));
  await app.system.kill('spinner');
  await restarted(app, 'jobs_server', server, 20_000);
  await eventually(() => Object.keys(types).every((type) => app.system.whereis(`notifier:${type}`) !== undefined), 30_000, 'every notifier back');
  t.is(app.system.whereis('jobs_sup'), root, 'the root survived');
  await app.add('type-7', 'x', {});
  const sub = await app.subscribe('type-7', 'x');
  const job = await app.accept('type-7');
  await app.finish(job!);
  t.like(await app.wait(sub, 'finished', 10_000), { state: 'finished' });
});
