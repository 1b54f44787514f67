// An app sets a type's limits in its store (`app.setLimits`): its accepts
// take no more of the type's jobs at once than the concurrency, and the
// admin endpoint shows the limits read-only.

import test from 'ava';
import { eventually, request, startAdminApp } from '../admin/fixtures/admin-app.js';

test("an app's accepts take no more jobs of a limited type than its concurrency, and the admin endpoint and its types listing show the limits", async (t) => {
  t.timeout(60_000);
  const { app, admin } = await startAdminApp(t);
  await app.setLimits('email', { concurrency: 2 });
  t.deepEqual(await app.getLimits('email'), { concurrency: 2 });
  t.deepEqual((await request(`${admin.url}/api/types/email/limits`)).body, { type: 'email', limits: { concurrency: 2 } });
  // The types listing (what the dashboard shows) carries them too, once its next sample is read.
  const listed = async () => {
    const { types } = (await request(`${admin.url}/api/types`)).body as { types: { type: string; limits?: unknown }[] };
    return JSON.stringify(types.find((each) => each.type === 'email')?.limits) === JSON.stringify({ concurrency: 2 });
  };
  await eventually(listed, 20_000, 'the limits in GET /api/types');
  await app.addMany('email', Array.from({ length: 4 }, (_, i) => ({ id: `m${i}`, data: { i } })));
  const first = await app.accept('email', { timeout: 5_000 });
  const second = await app.accept('email', { timeout: 5_000 });
  if (first === undefined || second === undefined) throw new Error('the two slots were not both free');
  t.is(await app.accept('email', { timeout: 0 }), undefined, 'no third job while two run');
  await app.finish(first);
  t.truthy(await app.accept('email', { timeout: 5_000 }), 'a finish frees a slot');
  await app.setLimits('email', null);
  t.deepEqual((await request(`${admin.url}/api/types/email/limits`)).body, { type: 'email', limits: null });
  t.truthy(await app.accept('email', { timeout: 0 }), 'lifted');
});

test("an app's adds carry a group, its accepts start one job per group under group concurrency 1, and the admin endpoint shows the group limits", async (t) => {
  t.timeout(60_000);
  const { app, admin } = await startAdminApp(t);
  await app.setTypeTimeout('report', 30);
  await app.setLimits('report', { group: { concurrency: 1 } });
  t.deepEqual((await request(`${admin.url}/api/types/report/limits`)).body, { type: 'report', limits: { group: { concurrency: 1 } } });
  await app.add('report', 'a1', null, { group: 'tenant-a' });
  await app.add('report', 'a2', null, { group: 'tenant-a' });
  await app.add('report', 'b1', null, { group: 'tenant-b' });
  const first = await app.accept('report', { timeout: 5_000 });
  const second = await app.accept('report', { timeout: 5_000 });
  if (first === undefined || second === undefined) throw new Error('two groups, two slots');
  t.deepEqual([first.group, second.group].sort(), ['tenant-a', 'tenant-b']);
  t.is(await app.accept('report', { timeout: 0 }), undefined, "a2 waits for its group's slot");
  await app.finish(first.group === 'tenant-a' ? first : second);
  const third = await app.accept('report', { timeout: 5_000 });
  t.is(third?.id, 'a2');
});
