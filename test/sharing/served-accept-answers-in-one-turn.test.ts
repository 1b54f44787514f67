// A served accept's answer is ready in the turn of the microtask queue
// after the owner's accept gets its jobs: every turn between the two is on the
// way from an add to the start of its handler in an idle worker of another
// process. A caller that went away meanwhile still gets its jobs given
// back, and an answer of none.

import test from 'ava';
import type { Job } from '../../packages/core/src/jobs/interfaces.js';
import type { Jobs } from '../../packages/core/src/jobs/jobs.js';
import { servedJobsCalls } from '../../packages/core/src/sharing/served-jobs-calls.js';
import type { ServedCall, ServedConnection } from '../../packages/core/src/sharing/store-server.js';

const job = { type: 't1', id: 'j1', lock: 'l1', data: null, priority: 0, scheduledTime: 0, resubmit: false, continuous: false, attempts: 0 } as unknown as Job;

/** A jobs handle whose accepts wait until `hand` gives them jobs; it records what is given back. */
function jobsToServe(): { jobs: Jobs; hand(taken: Job[]): void; givenBack: string[] } {
  let hand!: (taken: Job[]) => void;
  const givenBack: string[] = [];
  const jobs = {
    acceptMany: () =>
      new Promise<Job[]>((resolve) => {
        hand = resolve;
      }),
    accept: () =>
      new Promise<Job | undefined>((resolve) => {
        hand = (taken) => resolve(taken[0]);
      }),
    resubmit: (taken: Job) => Promise.resolve(taken),
    finish: (taken: Job) => {
      givenBack.push(taken.id);
      return Promise.resolve('pending');
    },
  } as unknown as Jobs;
  return { jobs, hand: (taken) => hand(taken), givenBack };
}

function callOf(signal: AbortSignal): ServedCall {
  const connection: ServedConnection = { pid: 1, open: true, push: () => {}, onClose: () => {} };
  // Its accepts are never handed jobs by a write, which is what answers a
  // call early; what their methods resolve with is encoded (prepared) first.
  return {
    signal,
    connection,
    answered: false,
    answer: () => {
      throw new Error('answered early');
    },
    prepare: () => true,
  };
}

/** Turns of the microtask queue until `answer` settles (at most 20). */
async function turnsUntilSettled(answer: Promise<unknown>): Promise<number> {
  let settled = false;
  void answer.then(() => {
    settled = true;
  });
  let turns = 0;
  while (!settled && turns < 20) {
    await null;
    turns++;
  }
  return turns;
}

for (const method of ['acceptMany', 'accept'] as const) {
  test(`a served ${method} answers in the turn after its jobs arrive`, async (t) => {
    const { jobs, hand } = jobsToServe();
    const served = servedJobsCalls(() => jobs).get(method)!;
    const args = method === 'acceptMany' ? ['t1', 1, {}] : ['t1', {}];
    const answer = Promise.resolve(served(args, callOf(new AbortController().signal)));
    // The accept is waiting: let whatever the served method starts run first.
    for (let turn = 0; turn < 5; turn++) await null;
    hand([job]);
    // Counted from here: the turn the accept's caller resumes in, then the one its answer is read in.
    const turns = await turnsUntilSettled(answer);
    t.deepEqual(await answer, method === 'acceptMany' ? [job] : job);
    t.is(turns, 2);
  });
}

test('a served accept whose caller went away gives its jobs back and answers none', async (t) => {
  const { jobs, hand, givenBack } = jobsToServe();
  const served = servedJobsCalls(() => jobs).get('acceptMany')!;
  const controller = new AbortController();
  const answer = Promise.resolve(served(['t1', 1, {}], callOf(controller.signal)));
  controller.abort();
  hand([job]);
  t.deepEqual(await answer, []);
  t.deepEqual(givenBack, ['j1']);
});
