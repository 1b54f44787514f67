import { createHook } from 'node:async_hooks';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { type AppProcessMode, AppProcessSystem } from '../../bench/peers/systems/app-process.js';

const JOBS = 200;

/** Drains JOBS jobs at 8 handlers, counting the Immediates this thread schedules meanwhile (each one a turn of its event loop). */
async function drainCountingImmediates(mode: AppProcessMode): Promise<{ jobs: number; immediates: number }> {
  const scratch = await mkdtemp(join(tmpdir(), 'jobtree-bench-app-process-'));
  let immediates = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'Immediate') immediates++;
    },
  });
  try {
    const system = await AppProcessSystem.open(scratch, mode);
    hook.enable();
    const result = await system.drain(JOBS, 8);
    return { jobs: result.jobs, immediates };
  } finally {
    hook.disable();
    await rm(scratch, { recursive: true, force: true });
  }
}

// A drain's CPU is the process's: the benchmark's own wait for the scheduler
// must not keep the main thread turning while the handler threads start.
test.serial('a drain in handler threads counts every job once and does not spin while the threads start', async (t) => {
  const { jobs, immediates } = await drainCountingImmediates('threads');
  t.is(jobs, JOBS);
  t.true(immediates < 10 * JOBS, `${immediates} Immediates for ${JOBS} jobs`);
});

test.serial('a drain on the main thread counts every job once', async (t) => {
  const { jobs, immediates } = await drainCountingImmediates('main thread');
  t.is(jobs, JOBS);
  t.true(immediates < 10 * JOBS, `${immediates} Immediates for ${JOBS} jobs`);
});
