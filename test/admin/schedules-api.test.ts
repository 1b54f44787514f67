// The admin endpoint's JSON API on schedules: PUT /api/schedules/:name sets
// one (as app.schedule does, with the same typed errors for a bad spec) and
// DELETE /api/schedules/:name removes it, both behind the token; GET
// /api/schedules lists what they left.

import test from 'ava';
import { request, startAdminApp } from './fixtures/admin-app.js';

interface Listed {
  schedules: { name: string; type: string; spec: unknown; backfill: unknown; nextTick: number | null }[];
}

test.serial('PUT and DELETE /api/schedules/:name need the token, set and remove the schedule, and GET lists it', async (t) => {
  const { app, admin } = await startAdminApp(t, {}, { report: 30 });
  const body = { spec: { everyMs: 3_600_000 }, type: 'report', data: { kind: 'hourly' }, priority: 2, backfill: 'last' };
  const refused = await request(`${admin.url}/api/schedules/hourly`, 'PUT', { body });
  t.is(refused.status, 401);
  t.deepEqual(await app.schedules(), []);

  const set = await request(`${admin.url}/api/schedules/hourly`, 'PUT', { token: admin.token, body });
  t.is(set.status, 200);
  t.like((set.body as { schedule: object }).schedule, { name: 'hourly', type: 'report', data: { kind: 'hourly' }, priority: 2, backfill: 'last' });
  t.deepEqual(
    (await app.schedules()).map((each) => [each.name, each.spec]),
    [['hourly', { everyMs: 3_600_000 }]],
  );
  // A cron expression as a string, with its time zone as an option; the same name again replaces it.
  const cron = await request(`${admin.url}/api/schedules/hourly`, 'PUT', {
    token: admin.token,
    body: { spec: '0 * * * *', timezone: 'Europe/Berlin', type: 'report' },
  });
  t.is(cron.status, 200);
  const listed = (await request(`${admin.url}/api/schedules`)).body as Listed;
  t.deepEqual(
    listed.schedules.map((each) => [each.name, each.spec, each.backfill]),
    [['hourly', { cron: '0 * * * *', timezone: 'Europe/Berlin' }, 'none']],
  );
  t.is((listed.schedules[0]?.nextTick ?? 1) % 60_000, 0);

  t.is((await request(`${admin.url}/api/schedules/hourly`, 'DELETE')).status, 401);
  const removed = await request(`${admin.url}/api/schedules/hourly`, 'DELETE', { token: admin.token });
  t.is(removed.status, 200);
  t.deepEqual(removed.body, { name: 'hourly', removed: true });
  t.deepEqual(await app.schedules(), []);
  const again = await request(`${admin.url}/api/schedules/hourly`, 'DELETE', { token: admin.token });
  t.is(again.status, 404);
  t.is((again.body as { error: { code: string } }).error.code, 'not_found');
});

test.serial('a bad schedule is refused with the typed error app.schedule gives, and nothing is stored', async (t) => {
  const { app, admin } = await startAdminApp(t, {}, { report: 30 });
  const cases: [object, string][] = [
    [{ spec: 'not a cron', type: 'report' }, 'invalid_schedule'],
    [{ spec: '0 * * * *', timezone: 'Mars/Olympus', type: 'report' }, 'invalid_schedule'],
    [{ spec: { everyMs: 0 }, type: 'report' }, 'invalid_schedule'],
    [{ type: 'report' }, 'invalid_schedule'],
    [{ spec: { everyMs: 1_000 }, type: 'report', backfill: 'all' }, 'invalid_schedule'],
    [{ spec: { everyMs: 1_000 }, type: 'report', every: 5 }, 'invalid_option'],
    [{ spec: { everyMs: 1_000 } }, 'invalid_job_type'],
  ];
  for (const [body, code] of cases) {
    const answer = await request(`${admin.url}/api/schedules/bad`, 'PUT', { token: admin.token, body });
    t.is(answer.status, 400, JSON.stringify(body));
    t.is((answer.body as { error: { code: string } }).error.code, code, JSON.stringify(body));
    const direct = await t.throwsAsync(app.schedule('bad', (body as { spec?: never }).spec as never, { ...body, spec: undefined } as never));
    t.is((direct as { code?: string }).code, code, `app.schedule gives the same error for ${JSON.stringify(body)}`);
  }
  t.deepEqual(await app.schedules(), []);
});
