// Signing a browser in to the dashboard without the token in a URL: a code
// asked for with the token (POST /api/dashboard/codes) is traded once, within
// 60 s, at GET /dashboard/open for a session cookie (HttpOnly,
// SameSite=Strict) that stands for the token only on requests carrying the
// dashboard's header, for 12 hours after the sign-in.

import test from 'ava';
import { DashboardSessions } from '../../packages/jobtree/src/admin/dashboard-sessions.js';
import { request, startAdminApp } from './fixtures/admin-app.js';

test('a code needs the token, works once, and gives a session cookie that signs changes only with the dashboard header', async (t) => {
  const { app, admin } = await startAdminApp(t);
  t.is((await request(`${admin.url}/api/dashboard/codes`, 'POST')).status, 401);
  const issued = await request(`${admin.url}/api/dashboard/codes`, 'POST', { token: admin.token });
  t.is(issued.status, 200);
  const { code, path, expiresInMs } = issued.body as { code: string; path: string; expiresInMs: number };
  t.is(path, `/dashboard/open?code=${code}`);
  t.is(expiresInMs, 60_000);

  const signIn = await fetch(`${admin.url}${path}`, { redirect: 'manual' });
  t.is(signIn.status, 303);
  const cookie = signIn.headers.get('set-cookie') ?? '';
  const session = cookie.split(';')[0] as string;
  t.regex(session, new RegExp(`^jobtree_session_${new URL(admin.url).port}=`));
  t.regex(cookie, /; Max-Age=43200;/, 'the browser drops the cookie when the session ends');

  const add = (id: string, headers: Record<string, string>) => request(`${admin.url}/api/jobs/email/${id}`, 'POST', { headers, body: {} });
  t.is((await add('cookie-only', { cookie: session })).status, 401, 'the cookie alone, as a form of another page would send it, is not enough');
  t.is((await add('header-only', { 'x-jobtree-dashboard': '1' })).status, 401);
  t.is((await add('forged', { cookie: `${session.split('=')[0]}=forged`, 'x-jobtree-dashboard': '1' })).status, 401);
  t.is((await add('signed-in', { cookie: `other=1; ${session}`, 'x-jobtree-dashboard': '1' })).status, 200);
  t.like(await app.getJob('email', 'signed-in'), { state: 'pending' });
  t.is(await app.getJob('email', 'cookie-only'), undefined);
  t.is((await fetch(`${admin.url}${path}`, { redirect: 'manual' })).status, 401, 'spent');
});

test('a code expires after 60 s; the oldest unspent codes and sessions give way to new ones', (t) => {
  const sessions = new DashboardSessions();
  const sessionOf = (redeemed: ReturnType<DashboardSessions['redeem']>) => ('session' in redeemed ? redeemed.session : 'none');
  const { code } = sessions.issueCode(1_000);
  t.deepEqual(sessions.redeem(code, 61_000), { refused: 'unknown' });
  const fresh = sessions.issueCode(1_000);
  const session = sessionOf(sessions.redeem(fresh.code, 60_999));
  t.true(sessions.has(session, 61_000));
  t.false(sessions.has('made-up', 61_000));

  const first = sessions.issueCode(0);
  for (let i = 0; i < 16; i++) sessions.issueCode(0);
  t.deepEqual(sessions.redeem(first.code, 1), { refused: 'unknown' }, 'pushed out by 16 newer codes');
  const kept: string[] = [];
  for (let i = 0; i < 64; i++) kept.push(sessionOf(sessions.redeem(sessions.issueCode(0).code, 1)));
  t.false(sessions.has(session, 2), 'pushed out by 64 newer sessions');
  t.true(kept.every((each) => sessions.has(each, 2)));
});

test('a session ends 12 hours after its sign-in, used or not', (t) => {
  const sessions = new DashboardSessions();
  const redeemed = sessions.redeem(sessions.issueCode(0).code, 1_000);
  if (!('session' in redeemed)) return t.fail('the code was refused');
  t.is(redeemed.expiresInMs, 12 * 3_600_000);
  t.true(sessions.has(redeemed.session, 1_000));
  t.true(sessions.has(redeemed.session, 1_000 + 12 * 3_600_000 - 1), 'in use until its last millisecond');
  t.false(sessions.has(redeemed.session, 1_000 + 12 * 3_600_000));
  t.false(sessions.has(redeemed.session, 1_000), 'an ended session stays ended');
});

test('a code brought a second time ends the session it bought, and a session cannot ask for codes of its own', async (t) => {
  // Whoever reads the opener's command line (ps) can trade the code before the
  // browser does; the browser's own try then ends that session, and the
  // session could not have been made into new ones meanwhile.
  const { app, admin } = await startAdminApp(t);
  const { path } = (await request(`${admin.url}/api/dashboard/codes`, 'POST', { token: admin.token })).body as { path: string };
  const taken = await fetch(`${admin.url}${path}`, { redirect: 'manual' });
  const session = (taken.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const asSession = { cookie: session, 'x-jobtree-dashboard': '1' };
  t.is((await request(`${admin.url}/api/dashboard/codes`, 'POST', { headers: asSession })).status, 401, 'a session asks for no code');
  t.is((await request(`${admin.url}/api/jobs/email/before`, 'POST', { headers: asSession, body: {} })).status, 200);

  const broughtAgain = await fetch(`${admin.url}${path}`, { redirect: 'manual' });
  t.is(broughtAgain.status, 401);
  t.regex(((await broughtAgain.json()) as { error: { message: string } }).error.message, /already used/);
  t.is((await request(`${admin.url}/api/jobs/email/after`, 'POST', { headers: asSession, body: {} })).status, 401, 'the session the code bought is over');
  t.is(await app.getJob('email', 'after'), undefined);
});

test('a cookie of the same name tossed in ahead of the session (by another server on the host) does not hide it', async (t) => {
  // Cookies are shared by every port of a host, and one set with a longer
  // Path comes first: the browser then sends both under the one name.
  const { admin } = await startAdminApp(t);
  const { path } = (await request(`${admin.url}/api/dashboard/codes`, 'POST', { token: admin.token })).body as { path: string };
  const session = ((await fetch(`${admin.url}${path}`, { redirect: 'manual' })).headers.get('set-cookie') ?? '').split(';')[0] as string;
  const name = session.split('=')[0] as string;
  const headers = { cookie: `${name}=tossed; ${session}`, 'x-jobtree-dashboard': '1' };
  t.is((await request(`${admin.url}/api/jobs/email/tossed`, 'POST', { headers, body: {} })).status, 200);
});
