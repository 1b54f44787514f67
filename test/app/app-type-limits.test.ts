// An app sets a type's limits in its store (`app.setLimits`): its accepts
// take no more of the type's jobs at once than the concurrency, and the
// admin endpoint shows the limits read-only.

import test from 'ava';
import { request, startAdminApp } from '../admin/fixtures/admin-app.js';

test("an app's accepts take no more jobs of a limited type than its concurrency, and the admin endpoint shows the limits", async (t) => {
  t.timeout(60_000);
  const { app, admin } = await startAdminApp(t);
  await app.setLimits('email', { concurrency: 2 });
  t.deepEqual(await app.getLimits('email'), { concurrency: 2 });
  t.deepEqual((await request(`${admin.url}/api/types/email/limits`)).body, { type: 'email', limits: { concurrency: 2 } });
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
