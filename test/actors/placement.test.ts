import { type ActorDefinition, type ActorRef, createActorSystem, type DownMessage, defineActor, type ExitMessage, type SystemMessage } from '@jobtree/actors';
import test from 'ava';
import { eventually } from './fixtures/eventually.js';
import probe from './fixtures/probe.js';

const probeUrl = new URL('./fixtures/probe.ts', import.meta.url).href;

test('1,000 actors run on at most 4 threads, each with its own mailbox', async (t) => {
  const system = createActorSystem({ threads: 4 });
  t.teardown(() => system.shutdown());
  const refs: ActorRef[] = [];
  for (let i = 0; i < 1000; i += 100) {
    refs.push(...(await Promise.all(Array.from({ length: 100 }, () => system.spawn(probe, {})))));
  }
  t.is(new Set(refs.map((r) => r.id)).size, 1000);
  const threads = new Set(refs.map((r) => system.threadOf(r)));
  t.true(threads.size <= 4 && threads.size >= 2, `threads used: ${[...threads].join(',')}`);
  t.false(threads.has(0));
  for (const [i, ref] of refs.entries()) system.cast(ref, { op: 'record', v: i });
  const logs = await Promise.all(refs.map((ref) => system.call<number[]>(ref, { op: 'log' })));
  t.deepEqual(
    logs,
    refs.map((_, i) => [i]),
  );
});

test('a dedicated actor gets a thread of its own, which ends with it', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const [pooled] = system.threads();
  const alone = await system.spawn(probe, {}, { placement: 'dedicated' });
  const thread = system.threadOf(alone);
  t.not(thread, pooled);
  for (let i = 0; i < 5; i++) t.is(system.threadOf(await system.spawn(probe, {})), pooled);
  const exited = new Promise<void>((resolve) => {
    system.events.on('exited', (event) => event.id === alone.id && resolve());
  });
  system.cast(alone, { op: 'stop', reason: 'normal' });
  await exited;
  await eventually(() => !system.threads().includes(thread as number), 'the dedicated thread to end');
  const second = await system.spawn(probe, {}, { placement: 'dedicated' });
  t.is(await system.call(second, { op: 'echo', v: 'again' }), 'again');
});

interface CoordinatorArgs {
  child: ActorDefinition<unknown, unknown>;
  childArgs: unknown;
  seen: (msg: SystemMessage | { type: 'TIMEOUT'; tag: string }) => void;
}

type CoordinatorCall = 'child' | 'thread' | 'shutdownChild';

/** A supervisor-like actor for the main thread: its args hold a function and a definition. */
const coordinator = defineActor(
  import.meta.url,
  {
    async init(args: CoordinatorArgs, ctx) {
      ctx.trapExit(true);
      const child = await ctx.spawn(args.child, args.childArgs, { link: true });
      return { args, child };
    },
    async handleCall(msg: CoordinatorCall, state, ctx) {
      if (msg === 'child') return { reply: state.child.id };
      if (msg === 'thread') return { reply: (await import('node:worker_threads')).isMainThread };
      // OTP's shutdown of a child: exit(shutdown), wait for DOWN with a timeout, then kill.
      const ref = ctx.monitor(state.child);
      ctx.exit(state.child, 'shutdown');
      const first = await ctx.receive((m) => isDownOf(m, ref), 200);
      if (first !== undefined) return { reply: ['stopped', first] };
      ctx.kill(state.child);
      const second = await ctx.receive((m) => isDownOf(m, ref), 5000);
      return { reply: ['killed', second] };
    },
    handleInfo(msg, state) {
      state.args.seen(msg);
      return state;
    },
  },
  'coordinator',
);

function isDownOf(msg: unknown, ref: string): msg is DownMessage {
  return (msg as DownMessage).type === 'DOWN' && (msg as DownMessage).ref === ref;
}

test('a main-placement actor runs on the main thread, gets args by reference, and sees its pooled child crash', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const seen: unknown[] = [];
  const ref = await system.spawn(coordinator, { child: probe, childArgs: {}, seen: (m) => seen.push(m) }, { placement: 'main' });
  t.is(system.threadOf(ref), 0);
  t.true(await system.call(ref, 'thread'));
  const child = await system.call<string>(ref, 'child');
  t.not(system.threadOf(child), 0);
  system.cast(child, { op: 'throw' });
  const exit = await eventually(() => seen.find((m) => (m as ExitMessage).type === 'EXIT'), 'EXIT');
  t.like(exit, { type: 'EXIT', from: child, reason: { error: { message: 'cast handler threw' } } });
});

test('a main-placement actor waits for DOWN with receive and a timeout, then kills a child that traps exits', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const polite = await system.spawn(coordinator, { child: probe, childArgs: {}, seen: () => {} }, { placement: 'main' });
  const [how, down] = await system.call<[string, { reason: unknown }]>(polite, 'shutdownChild');
  t.is(how, 'stopped');
  t.is(down.reason, 'shutdown');
  const defiant = await system.spawn(coordinator, { child: probe, childArgs: { trap: true }, seen: () => {} }, { placement: 'main' });
  const [how2, down2] = await system.call<[string, { reason: unknown }]>(defiant, 'shutdownChild');
  t.is(how2, 'killed');
  t.is(down2.reason, 'killed');
});

test('an actor on a host thread can spawn a main-placement actor by module', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const parent = await system.spawn(probe, {});
  const child = await system.call<{ id: string }>(parent, { op: 'spawn', module: probeUrl, args: {}, placement: 'main' });
  t.is(system.threadOf(child), 0);
  t.is(await system.call(child, { op: 'echo', v: 'on main' }), 'on main');
});

test('spawn rejects bad definitions, placements and taken names with typed errors', async (t) => {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  await t.throwsAsync(system.spawn({} as never, {}), { code: 'bad_argument' } as never);
  await t.throwsAsync(system.spawn(probe, {}, { placement: 'moon' as never }), { code: 'bad_argument' } as never);
  await system.spawn(probe, {}, { name: 'taken' });
  await t.throwsAsync(system.spawn(probe, {}, { name: 'taken' }), { code: 'name_taken' } as never);
  const missing = defineActor(new URL('./fixtures/no-such-module.ts', import.meta.url).href, { init: () => 0 });
  const error = await t.throwsAsync(system.spawn(missing, undefined));
  t.like(error, { code: 'init_failed' });
  t.throws(() => defineActor('not a url', { init: () => 0 }), { code: 'bad_argument' } as never);
});
