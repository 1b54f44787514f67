// Significant children and autoShutdown (OTP's auto_shutdown): a supervisor
// that ends itself, reason `shutdown`, when significant children end on
// their own, and only then.

import type { ExitReason } from '@jobtree/actors';
import {
  type SupervisorSpec,
  Supervisor,
  SupervisorError,
  startSupervisor,
  supervisorChild,
} from '@jobtree/supervisor';
import { pooled } from './fixtures/children.js';
import { nextEvent, record } from './fixtures/next-event.js';
import { code, running } from './fixtures/outcomes.js';
import { test } from './fixtures/shared-system.js';

test('a significant child must be transient or temporary, under an autoShutdown other than never; simple_one_for_one takes none', async (t) => {
  const { system } = t.context;
  const invalid = async (spec: SupervisorSpec): Promise<string | undefined> => code(startSupervisor(system, spec));
  t.is(await invalid({ strategy: 'one_for_one', autoShutdown: 'any_significant', children: [pooled('p', {}, { significant: true })] }), 'invalid_spec');
  t.is(
    await invalid({ strategy: 'one_for_one', children: [pooled('t', {}, { restart: 'transient', significant: true })] }),
    'invalid_spec',
    'autoShutdown defaults to never',
  );
  t.is(await invalid({ strategy: 'simple_one_for_one', autoShutdown: 'all_significant', children: [pooled('job')] }), 'invalid_spec');
  t.is(await invalid({ strategy: 'one_for_one', autoShutdown: 'sometimes' as never, children: [] }), 'invalid_spec');
  t.is(
    await invalid({
      strategy: 'one_for_one',
      autoShutdown: 'any_significant',
      children: [pooled('t', {}, { restart: 'temporary', significant: 'yes' as never })],
    }),
    'invalid_spec',
  );
  t.throws(() => supervisorChild('inner', { strategy: 'one_for_one', children: [] }, { significant: true }), {
    instanceOf: SupervisorError,
    message: /transient or temporary/,
  });

  const never = await startSupervisor(system, { strategy: 'one_for_one', children: [] });
  t.is(await code(never.startChild(pooled('t', {}, { restart: 'temporary', significant: true }))), 'invalid_spec');
  const any = await startSupervisor(system, { strategy: 'one_for_one', autoShutdown: 'any_significant', children: [] });
  t.truthy(await any.startChild(pooled('t', {}, { restart: 'temporary', significant: true })));
});

test('any_significant: a transient significant child exiting normally shuts the supervisor down, reason shutdown, with all its children', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    autoShutdown: 'any_significant',
    children: [pooled('keeper'), pooled('job', {}, { restart: 'transient', significant: true })],
  });
  const keeper = running(await sup.whichChild('keeper'));
  const job = running(await sup.whichChild('job'));
  const supDown = system.monitor(sup.ref);
  const keeperDown = system.monitor(keeper);
  const event = nextEvent(sup.events, 'auto_shutdown');

  system.cast(job, { type: 'exit', reason: 'normal' });
  t.deepEqual(await event, { id: 'job', actor: job.id, reason: 'normal', autoShutdown: 'any_significant' });
  t.is(await keeperDown, 'shutdown');
  t.is(await supDown, 'shutdown');
});

test('a transient significant child that crashes is restarted and the supervisor stays', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    autoShutdown: 'any_significant',
    children: [pooled('job', {}, { restart: 'transient', significant: true })],
  });
  const shutdowns = record(sup.events, 'auto_shutdown');
  const job = running(await sup.whichChild('job'));
  const restarted = nextEvent(sup.events, 'child_restarted');
  system.cast(job, { type: 'crash', message: 'boom' });
  t.is((await restarted).previous, job.id);
  t.is(await system.call(running(await sup.whichChild('job')), { type: 'ping' }), 'pong');
  t.deepEqual(shutdowns, []);
});

test('a temporary significant child shuts the supervisor down whatever its exit reason', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    autoShutdown: 'any_significant',
    children: [pooled('job', {}, { restart: 'temporary', significant: true })],
  });
  const job = running(await sup.whichChild('job'));
  const supDown = system.monitor(sup.ref);
  const event = nextEvent(sup.events, 'auto_shutdown');
  system.cast(job, { type: 'crash', message: 'boom' });
  t.like(await event, { id: 'job', reason: { error: { message: 'boom' } } });
  t.is(await supDown, 'shutdown');
});

test('all_significant: the supervisor shuts down when the last significant child has ended, not before', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_one',
    autoShutdown: 'all_significant',
    children: [
      pooled('keeper'),
      pooled('first', {}, { restart: 'temporary', significant: true }),
      pooled('second', {}, { restart: 'transient', significant: true }),
    ],
  });
  const shutdowns = record(sup.events, 'auto_shutdown');
  const first = running(await sup.whichChild('first'));
  const second = running(await sup.whichChild('second'));
  const supDown = system.monitor(sup.ref);

  const firstExited = nextEvent(sup.events, 'child_exited', (event) => event.id === 'first');
  system.cast(first, { type: 'exit', reason: { shutdown: 'done' } });
  await firstExited;
  // The EXIT was handled before this call: the supervisor is still there, without the temporary child.
  t.deepEqual(
    (await sup.whichChildren()).map((child) => child.id),
    ['keeper', 'second'],
  );
  t.deepEqual(shutdowns, []);

  system.cast(second, { type: 'exit', reason: 'normal' });
  t.is(await supDown, 'shutdown');
  t.like(shutdowns, [{ id: 'second', reason: 'normal', autoShutdown: 'all_significant' }]);
});

test('a significant child the supervisor terminates itself (terminateChild, a one_for_all cascade) shuts nothing down', async (t) => {
  const { system } = t.context;
  const sup = await startSupervisor(system, {
    strategy: 'one_for_all',
    autoShutdown: 'any_significant',
    intensity: 5,
    children: [pooled('base'), pooled('job', {}, { restart: 'transient', significant: true })],
  });
  const shutdowns = record(sup.events, 'auto_shutdown');
  const oldJob = running(await sup.whichChild('job'));
  const jobRestarted = nextEvent(sup.events, 'child_restarted', (event) => event.id === 'job');
  system.kill(running(await sup.whichChild('base')));
  t.is((await jobRestarted).previous, oldJob.id, 'the cascade ended the significant child and started it again');

  await sup.terminateChild('job');
  t.is((await sup.whichChild('job')).actor, undefined);
  const temp = await sup.startChild(pooled('temp', {}, { restart: 'temporary', significant: true }));
  t.truthy(temp);
  await sup.terminateChild('temp');
  t.is(await code(sup.whichChild('temp')), 'not_found');
  t.deepEqual(shutdowns, []);
  t.is(await system.call(running(await sup.whichChild('base')), { type: 'ping' }), 'pong');
});

test('a nested supervisor that shuts itself down stays down under a transient spec, and as a significant child takes its parent down', async (t) => {
  const { system } = t.context;
  const innerSpec: SupervisorSpec = {
    strategy: 'one_for_one',
    autoShutdown: 'any_significant',
    children: [pooled('job', {}, { restart: 'transient', significant: true })],
  };
  const plain = supervisorChild('plain', innerSpec, { restart: 'transient' });
  const significant = supervisorChild('significant', innerSpec, { restart: 'transient', significant: true });
  const outer = await startSupervisor(system, {
    strategy: 'one_for_one',
    autoShutdown: 'any_significant',
    children: [pooled('keeper'), plain, significant],
  });
  const finish = async (id: string, events: Supervisor['events']): Promise<ExitReason> => {
    const inner = new Supervisor(system, running(await outer.whichChild(id)), events);
    const down = system.monitor(inner.ref);
    system.cast(running(await inner.whichChild('job')), { type: 'exit', reason: 'normal' });
    return down;
  };

  const plainExited = nextEvent(outer.events, 'child_exited', (event) => event.id === 'plain');
  t.is(await finish('plain', plain.events), 'shutdown');
  t.like(await plainExited, { reason: 'shutdown', terminated: false });
  t.deepEqual(await outer.whichChild('plain'), { id: 'plain', actor: undefined, type: 'supervisor', restart: 'transient' });

  const outerDown = system.monitor(outer.ref);
  t.is(await finish('significant', significant.events), 'shutdown');
  t.is(await outerDown, 'shutdown');
});
