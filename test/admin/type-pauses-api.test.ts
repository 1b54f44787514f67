// The admin endpoint's JSON API on pausing: POST /api/types/:type/pause and
// /resume behind the token, GET /api/types with each type's `paused`, and
// the live feed's queues event naming the paused types (the dashboard's
// pause column reads it), and the jobtree_type_paused gauge.

import test from 'ava';
import { eventually, request, startAdminApp } from './fixtures/admin-app.js';
import { parsePrometheusText, sum } from './fixtures/prometheus-text.js';

test.serial('pause and resume need the token, change the store, and show in GET /api/types', async (t) => {
  const { app, admin } = await startAdminApp(t);
  const refused = await request(`${admin.url}/api/types/email/pause`, 'POST');
  t.is(refused.status, 401);
  t.false(await app.isPaused('email'));

  const paused = await request(`${admin.url}/api/types/email/pause`, 'POST', { token: admin.token });
  t.is(paused.status, 200);
  t.deepEqual(paused.body, { type: 'email', paused: true });
  t.true(await app.isPaused('email'));
  const types = (await request(`${admin.url}/api/types`)).body as { types: { type: string; paused: boolean }[] };
  t.like(types.types.find((each) => each.type === 'email'), { paused: true });
  const metrics = parsePrometheusText(String((await request(`${admin.url}/metrics`)).body));
  t.is(metrics.types.get('jobtree_type_paused'), 'gauge');
  t.is(sum(metrics, 'jobtree_type_paused', { type: 'email' }), 1);

  const resumed = await request(`${admin.url}/api/types/email/resume`, 'POST', { token: admin.token });
  t.deepEqual(resumed.body, { type: 'email', paused: false });
  t.false(await app.isPaused('email'));
  const after = parsePrometheusText(String((await request(`${admin.url}/metrics`)).body));
  t.is(sum(after, 'jobtree_type_paused', { type: 'email' }), 0);
});

test.serial("the live feed's queues event names the paused types", async (t) => {
  const { app, admin } = await startAdminApp(t);
  await app.pause('email');
  const controller = new AbortController();
  t.teardown(() => controller.abort());
  const res = await fetch(`${admin.url}/api/events`, { signal: controller.signal });
  const reader = res.body!.getReader();
  let text = '';
  let queues: { paused: string[] } | undefined;
  await eventually(async () => {
    const { value } = await reader.read();
    text += new TextDecoder().decode(value);
    const match = /event: queues\ndata: (.*)\n/.exec(text);
    if (match !== null) queues = JSON.parse(match[1]!) as { paused: string[] };
    return queues !== undefined;
  }, 20_000, 'a queues event');
  t.deepEqual(queues?.paused, ['email']);
});
