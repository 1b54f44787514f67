// A kill is final: once the main thread has declared an actor dead (its
// monitor resolved), nothing that happens after can make it run a handler
// again, not even a call from an actor on the same host thread, which
// reaches it without passing through the main thread.

import { createActorSystem } from '@jobtree/actors';
import test from 'ava';
import probe from './fixtures/probe.js';

/** Enough tries to see a race that shows up in a few percent of them. */
const TRIES = 250;

type CallOutcome = { ok: unknown } | { code: string };

async function repliesAfterKill(t: { teardown(fn: () => unknown): void }, killOthersFirst: number): Promise<{ replies: number; codes: Set<string> }> {
  const system = createActorSystem({ threads: 1 });
  t.teardown(() => system.shutdown());
  const caller = await system.spawn(probe, {});
  let replies = 0;
  const codes = new Set<string>();
  for (let i = 0; i < TRIES; i++) {
    const others = [];
    for (let j = 0; j < killOthersFirst; j++) others.push(await system.spawn(probe, {}));
    const target = await system.spawn(probe, {});
    const down = system.monitor(target);
    for (const other of others) system.kill(other);
    system.kill(target);
    await down;
    const outcome = await system.call<CallOutcome>(caller, { op: 'call', to: target.id, msg: { op: 'echo', v: i }, timeoutMs: 10_000 });
    if ('ok' in outcome) replies++;
    else codes.add(outcome.code);
  }
  return { replies, codes };
}

test('after kill and its DOWN, a call from a co-hosted actor never gets a reply', async (t) => {
  const { replies, codes } = await repliesAfterKill(t, 0);
  t.is(replies, 0, `${replies} of ${TRIES} calls were answered by a killed actor`);
  t.true([...codes].every((code) => code === 'noproc' || code === 'killed'), [...codes].join(', '));
});

test('after kill and its DOWN, a co-hosted call gets no reply even when other kills were issued just before', async (t) => {
  const { replies, codes } = await repliesAfterKill(t, 3);
  t.is(replies, 0, `${replies} of ${TRIES} calls were answered by a killed actor`);
  t.true([...codes].every((code) => code === 'noproc' || code === 'killed'), [...codes].join(', '));
});
