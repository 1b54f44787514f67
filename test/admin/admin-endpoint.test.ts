// The admin endpoint of startJobs({ admin }): its JSON API, the token that
// mutations need and reads do not, the files it leaves for the CLI, and
// bad requests answered with a 4xx JSON error while the app carries on.

import { lstatSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import test from 'ava';
import { pino } from 'pino';
import { JobsError } from '@jobtree/core';
import { ADMIN_RECORD_FILE, ADMIN_TOKEN_FILE, AdminError, readAdminRecord, readAdminToken, startJobs } from 'jobtree';
import { eventually, followEvents, request, startAdminApp } from './fixtures/admin-app.js';
import { rawExchange } from './fixtures/raw-http.js';

test.serial('reads need no token and answer the tree, the types with counts, the jobs of a type and one job with its data', async (t) => {
  const { app, admin } = await startAdminApp(t);
  await app.add('email', 'a', { to: 'ada@example.com' });
  await app.add('email', 'b', { to: 'bob@example.com' }, { priority: 3 });
  const job = await app.accept('email', { timeout: 5_000 });
  if (job === undefined) throw new Error('no job');
  await app.finish(job, { sent: true });

  const status = await request(`${admin.url}/api/status`);
  t.is(status.status, 200);
  const body = status.body as { pid: number; tree: { name: string; children: { name: string }[] }; threads: number[]; scheduler: boolean };
  t.is(body.pid, process.pid);
  t.is(body.tree.name, 'jobs_sup');
  t.deepEqual(body.tree.children.map((c) => c.name), ['core', 'user_sup', 'activity_monitor_sup', 'notifier_sup', 'jobs_server', 'schedule_ticker', 'pruner']);
  t.true(Array.isArray(body.threads));

  const types = (await request(`${admin.url}/api/types`)).body as { types: { type: string; timeout: number; pending: number; running: number; finished: number; totals: { added: number; accepted: number; finished: number } }[] };
  t.is(types.types.length, 1);
  t.like(types.types[0], { type: 'email', timeout: 30, pending: 1, running: 0, finished: 1, totals: { added: 2, accepted: 1, finished: 1 } });

  const pending = (await request(`${admin.url}/api/jobs/email?state=pending`)).body as { total: number; jobs: { id: string }[] };
  t.is(pending.total, 1);
  t.deepEqual(pending.jobs.map((j) => j.id), ['a']);
  const limited = (await request(`${admin.url}/api/jobs/email?limit=1`)).body as { total: number; jobs: unknown[] };
  t.is(limited.total, 2);
  t.is(limited.jobs.length, 1);

  const one = await request(`${admin.url}/api/jobs/email/b`);
  t.is(one.status, 200);
  t.like(one.body, { type: 'email', id: 'b', state: 'finished', data: { sent: true }, priority: 3, scheduler: null });
  // No app.process yet: no scheduler runs.
  t.false(body.scheduler);
  t.deepEqual((await request(`${admin.url}/api/scheduler`)).body, { running: false, stats: null, jobs: null });
});

test.serial('the scheduler runs from the first app.process: status and the scheduler view say so', async (t) => {
  const { app, admin } = await startAdminApp(t);
  await app.process('email', async () => ({ sent: true }), { maxJobs: 1 });
  await app.add('email', 'a', { to: 'ada@example.com' });
  await eventually(async () => (await app.getJobState('email', 'a')) === 'finished');
  t.true(((await request(`${admin.url}/api/status`)).body as { scheduler: boolean }).scheduler);
  const view = (await request(`${admin.url}/api/scheduler`)).body as { running: boolean; stats: Record<string, { total: number }>; jobs: { jobs: unknown[] } };
  t.true(view.running);
  t.deepEqual(Object.keys(view.stats), ['email']);
  t.true(Array.isArray(view.jobs.jobs));
});

test.serial('the live feed sends the scheduler only while processors run: nothing before the first app.process, null once they stop', async (t) => {
  const { app, admin } = await startAdminApp(t);
  const feed = await followEvents(admin.url);
  t.teardown(() => feed.stop());
  const events = feed.events;
  const count = (name: string) => events.filter((e) => e.name === name).length;
  // Three queues events: three refreshes, each of which would have sent a scheduler.
  await eventually(() => count('queues') >= 3, 20_000, 'three refreshes');
  t.is(count('scheduler'), 0);

  await app.process('email', async () => ({ sent: true }), { maxJobs: 1 });
  await eventually(
    () => events.some((e) => e.name === 'scheduler' && e.data !== null && Object.keys((e.data as { stats: object }).stats).includes('email')),
    20_000,
    "the email processor's scheduler",
  );
  await app.system.stopChild('processor:email');
  await eventually(() => events.at(-1)?.name === 'queues' && events.filter((e) => e.name === 'scheduler').at(-1)?.data === null, 20_000, 'the scheduler gone');
  t.false(((await request(`${admin.url}/api/status`)).body as { scheduler: boolean }).scheduler);
  t.like((await request(`${admin.url}/api/scheduler`)).body, { running: false });
});

test.serial('mutations need the token: add, remove, set-timeout and kill answer 401 without it and work with it', async (t) => {
  const { app, admin } = await startAdminApp(t);
  const mutations: [string, string, object | undefined][] = [
    ['POST', '/api/jobs/email/x', { data: { n: 1 } }],
    ['DELETE', '/api/jobs/email/x', undefined],
    ['PUT', '/api/types/sms/timeout', { seconds: 10 }],
    ['DELETE', '/api/types/sms/timeout', undefined],
    ['POST', '/api/actors/notifier:email/kill', undefined],
  ];
  for (const [method, path, body] of mutations) {
    const none = await request(`${admin.url}${path}`, method, { body });
    t.is(none.status, 401, `${method} ${path} without a token`);
    t.is((none.body as { error: { code: string } }).error.code, 'unauthorized');
    const wrong = await request(`${admin.url}${path}`, method, { body, token: `${admin.token}x` });
    t.is(wrong.status, 401, `${method} ${path} with a wrong token`);
  }
  t.is(await app.getJobState('email', 'x'), undefined, 'nothing was added without the token');
  t.is(await app.getTypeTimeout('sms'), undefined);

  const added = await request(`${admin.url}/api/jobs/email/x`, 'POST', { token: admin.token, body: { data: { n: 1 }, priority: 2 } });
  t.deepEqual(added.body, { type: 'email', id: 'x', state: 'pending' });
  t.like(await app.getJob('email', 'x'), { data: { n: 1 }, priority: 2 });
  t.is((await request(`${admin.url}/api/jobs/email/x`, 'DELETE', { token: admin.token })).status, 200);
  t.is(await app.getJobState('email', 'x'), undefined);

  t.deepEqual((await request(`${admin.url}/api/types/sms/timeout`, 'PUT', { token: admin.token, body: { seconds: 10 } })).body, { type: 'sms', timeout: 10 });
  t.not(app.system.whereis('notifier:sms'), undefined, 'set-timeout through the endpoint starts the type\'s notifier');
  t.is((await request(`${admin.url}/api/types/sms/timeout`, 'DELETE', { token: admin.token })).status, 200);
  t.is(await app.getTypeTimeout('sms'), undefined);

  const before = app.system.whereis('notifier:email');
  if (before === undefined) throw new Error('notifier:email is not running');
  const killed = await request(`${admin.url}/api/actors/notifier:email/kill`, 'POST', { token: admin.token });
  t.is(killed.status, 200);
  const report = killed.body as { name: string; killed: string; replacement: string | null };
  t.is(report.killed, before);
  t.truthy(report.replacement);
  t.not(report.replacement, before);
  t.is(app.system.whereis('notifier:email'), report.replacement ?? undefined);
  t.is(app.system.tree().children.find((c) => c.name === 'jobs_server')?.restarts, 1, 'jobs_server re-created the notifier');
});

test.serial('bad requests get a 4xx JSON error and the app keeps answering', async (t) => {
  const { app, admin } = await startAdminApp(t);
  const token = admin.token;
  const cases: [string, string, { body?: string | object; token?: string; headers?: Record<string, string> }, number, string][] = [
    ['GET', '/api/nope', {}, 404, 'not_found'],
    ['GET', '/api/jobs/email/missing', {}, 404, 'not_found'],
    ['PATCH', '/api/jobs/email/x', { token }, 405, 'method_not_allowed'],
    ['GET', '/api/jobs/email?state=done', {}, 400, 'bad_request'],
    ['GET', '/api/jobs/email?limit=0', {}, 400, 'bad_request'],
    ['GET', '/api/jobs/email?limit=abc', {}, 400, 'bad_request'],
    ['GET', '/api/jobs/%E0%A4%A', {}, 400, 'bad_request'],
    ['POST', '/api/jobs/email/x', { token, body: '{not json' }, 400, 'bad_request'],
    ['POST', '/api/jobs/email/x', { token, body: '[1,2]' }, 400, 'bad_request'],
    ['POST', '/api/jobs/email/x', { token, body: { priority: -1 } }, 400, 'invalid_priority'],
    ['POST', '/api/jobs/email/x', { token, body: { scheduledTime: 'soon' } }, 400, 'invalid_scheduled_time'],
    ['POST', '/api/jobs/email/x', { token, body: { scheduledTime: Date.now() } }, 400, 'invalid_scheduled_time'],
    ['POST', '/api/jobs/email/x', { token, body: { data: 1, delay: 5 } }, 400, 'invalid_option'],
    ['POST', '/api/jobs/unknown-type/x', { token, body: {} }, 400, 'no_type_timeout'],
    ['POST', '/api/jobs/email/x', { token, body: 'x'.repeat(2 * 1024 * 1024) }, 413, 'payload_too_large'],
    ['PUT', '/api/types/email/timeout', { token, body: { seconds: 'ten' } }, 400, 'bad_request'],
    ['PUT', '/api/types/email/timeout', { token, body: { seconds: -5 } }, 400, 'invalid_timeout'],
    ['DELETE', '/api/jobs/email/never-added', { token }, 404, 'not_found'],
    ['POST', '/api/actors/no_such_actor/kill', { token }, 404, 'not_found'],
    ['GET', '/api/status', { headers: { authorization: 'Basic abc' } }, 200, ''],
  ];
  for (const [method, path, options, status, code] of cases) {
    const answer = await request(`${admin.url}${path}`, method, options);
    t.is(answer.status, status, `${method} ${path}: ${JSON.stringify(answer.body).slice(0, 200)}`);
    if (code !== '') {
      t.regex(answer.type ?? '', /application\/json/);
      t.is((answer.body as { error: { code: string } }).error.code, code, `${method} ${path}`);
    }
  }
  // A malformed HTTP request (not even a request line) is answered 400 on its socket.
  const { connect } = await import('node:net');
  const url = new URL(admin.url);
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write('THIS IS NOT HTTP\r\n\r\n'));
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString();
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  t.regex(raw, /^HTTP\/1\.1 400/);
  await app.add('email', 'still-works', {});
  t.is((await request(`${admin.url}/api/jobs/email/still-works`)).status, 200);
});

test.serial('the data directory records the address and a token readable by its owner only; close removes both', async (t) => {
  const { app, admin, dir } = await startAdminApp(t);
  const record = readAdminRecord(dir);
  t.like(record, { url: admin.url, pid: process.pid });
  t.is(readAdminToken(dir), admin.token);
  t.is(statSync(join(dir, ADMIN_TOKEN_FILE)).mode & 0o777, 0o600);
  await app.close();
  t.is(readAdminRecord(dir), undefined);
  t.throws(() => statSync(join(dir, ADMIN_RECORD_FILE)));
  t.throws(() => statSync(join(dir, ADMIN_TOKEN_FILE)));
});

test.serial('the dashboard page and its script are served', async (t) => {
  const { admin } = await startAdminApp(t);
  const page = await request(`${admin.url}/`);
  t.is(page.status, 200);
  t.regex(page.type ?? '', /text\/html/);
  t.regex(String(page.body), /<script type="module" src="\/dashboard.js">/);
  const script = await request(`${admin.url}/dashboard.js`);
  t.is(script.status, 200);
  t.regex(script.type ?? '', /javascript/);
  t.regex(String(script.body), /EventSource\('\/api\/events'\)/);
});

test.serial('server-sent events deliver the tree, the queues with totals, and a restart when an actor is killed', async (t) => {
  const { app, admin } = await startAdminApp(t);
  const feed = await followEvents(admin.url);
  t.teardown(() => feed.stop());
  t.regex(feed.contentType ?? '', /text\/event-stream/);
  const events = feed.events;
  const seen = (name: string, test: (data: unknown) => boolean = () => true) => events.some((e) => e.name === name && test(e.data));
  await eventually(() => seen('hello') && seen('tree') && seen('queues'), 20_000, 'the first events');
  const tree = events.find((e) => e.name === 'tree')?.data as { tree: { name: string }; threads: number[] };
  t.is(tree.tree.name, 'jobs_sup');

  await app.add('email', 'live-1', { n: 1 });
  await eventually(
    () => seen('queues', (d) => (d as { types: { type: string; pending: number }[] }).types.some((q) => q.type === 'email' && q.pending === 1)),
    20_000,
    'the new job in the queues',
  );
  const queues = events.filter((e) => e.name === 'queues').at(-1)?.data as { totals: Record<string, { added: number }> };
  t.is(queues.totals.email?.added, 1);

  await app.system.kill('activity_monitor_sup');
  await eventually(() => seen('restart', (d) => (d as { child: string }).child === 'activity_monitor_sup'), 20_000, 'the restart event');
  await eventually(
    () => seen('tree', (d) => (d as { tree: { children: { name: string; restarts: number }[] } }).tree.children.some((c) => c.name === 'activity_monitor_sup' && c.restarts === 1)),
    20_000,
    'a tree with the restart counted',
  );
  await feed.stop();
});

test.serial('admin options are checked: a bad port, host or field is a JobsError invalid_option', async (t) => {
  for (const admin of [{ port: -1 }, { port: 70_000 }, { port: '80' }, { port: 0, host: '' }, { port: 0, colour: 'red' }, { port: 0, refreshMs: 1 }, { port: 0, token: 'short' }, 'yes']) {
    const error = await t.throwsAsync(startJobs({ path: '/nonexistent/never-created', admin } as never));
    t.true(JobsError.is(error, 'invalid_option'), JSON.stringify(admin));
  }
  const error = await t.throwsAsync(startJobs({ path: '/nonexistent/never-created', logLevel: 'loud' } as never));
  t.true(JobsError.is(error, 'invalid_option'));
});

test.serial('listening beyond loopback logs a warning through the app logger', async (t) => {
  const lines: { level: number; msg: string; host?: string }[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = pino({ level: 'warn' }, sink);
  const { admin } = await startAdminApp(t, { admin: { port: 0, host: '0.0.0.0' }, logger });
  t.regex(admin.url, /^http:\/\/0\.0\.0\.0:\d+$/);
  t.true(lines.some((line) => line.level === 40 && line.host === '0.0.0.0' && /beyond loopback/.test(line.msg)));
});

test.serial('a port already in use fails startJobs with AdminError unavailable, and leaves the store free', async (t) => {
  const { admin, dir } = await startAdminApp(t);
  const port = Number(new URL(admin.url).port);
  const other = join(dir, 'second-store');
  const error = await t.throwsAsync(startJobs({ path: other, admin: { port } }));
  t.true(error instanceof AdminError && error.code === 'unavailable', String(error));
  t.regex(error?.message ?? '', /cannot listen on 127\.0\.0\.1:\d+/);
  const again = await startJobs({ path: other });
  await again.close();
});

test.serial('on loopback, a request naming another host is refused (a rebound domain cannot read the app)', async (t) => {
  const { admin } = await startAdminApp(t);
  const { request: httpRequest } = await import('node:http');
  const url = new URL(admin.url);
  const status = (host: string) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: url.hostname, port: url.port, path: '/api/status', headers: { host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  t.is(await status('evil.example:80'), 403);
  t.is(await status(`localhost:${url.port}`), 200);
  t.is(await status(`127.0.0.1:${url.port}`), 200);
  t.is(await status('[::1]'), 200);
});

test.serial('server-sent events send the tree again only when it changed, the queues every refresh', async (t) => {
  const { admin } = await startAdminApp(t);
  const feed = await followEvents(admin.url);
  t.teardown(() => feed.stop());
  const count = (name: string) => feed.events.filter((e) => e.name === name).length;
  await eventually(() => count('tree') >= 1, 20_000, 'the first tree');
  const trees = count('tree');
  const queues = count('queues');
  await eventually(() => count('queues') >= queues + 5, 20_000, 'five more queue samples');
  t.is(count('tree'), trees, 'nothing changed in the tree: it was not sent again');
  const sent = feed.events.find((e) => e.name === 'tree')?.data as { now?: unknown } | undefined;
  t.is(typeof sent?.now, 'number', 'a sent tree carries the time');
});

test.serial('a method a path does not answer is 405 with the methods it does in Allow; HEAD is answered as GET', async (t) => {
  const { admin } = await startAdminApp(t);
  const allow = async (method: string, path: string) => {
    const res = await fetch(`${admin.url}${path}`, { method, headers: { authorization: `Bearer ${admin.token}` } });
    await res.text();
    return [res.status, res.headers.get('allow')];
  };
  t.deepEqual(await allow('PATCH', '/api/jobs/email/x'), [405, 'GET, HEAD, POST, DELETE']);
  t.deepEqual(await allow('GET', '/api/types/email/timeout'), [405, 'PUT, DELETE']);
  t.deepEqual(await allow('POST', '/api/status'), [405, 'GET, HEAD']);
  for (const path of ['/', '/dashboard.js', '/metrics', '/api/events']) t.deepEqual(await allow('POST', path), [405, 'GET, HEAD'], path);
  const head = await fetch(`${admin.url}/api/status`, { method: 'HEAD' });
  t.is(head.status, 200);
  t.regex(head.headers.get('content-type') ?? '', /application\/json/);
  t.is(await head.text(), '');
  const stream = await fetch(`${admin.url}/api/events`, { method: 'HEAD' });
  t.is(stream.status, 200);
  t.is(await stream.text(), '');
});

test.serial('no other site may frame the dashboard, and no answer is sniffed as another type', async (t) => {
  const { admin } = await startAdminApp(t);
  const page = await fetch(`${admin.url}/`);
  await page.text();
  t.is(page.headers.get('content-security-policy'), "frame-ancestors 'none'");
  t.is(page.headers.get('x-frame-options'), 'DENY');
  for (const path of ['/', '/dashboard.js', '/api/status', '/api/nope']) {
    const res = await fetch(`${admin.url}${path}`);
    await res.text();
    t.is(res.headers.get('x-content-type-options'), 'nosniff', path);
  }
});

test.serial('a client that goes away in the middle of its body is not logged as a failure of the server', async (t) => {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const { app, admin } = await startAdminApp(t, { logger: pino({ level: 'info' }, sink) });
  const host = new URL(admin.url).host;
  const cut = await rawExchange(admin.url, `POST /api/jobs/email/cut HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${admin.token}\r\nContent-Length: 100\r\n\r\n{"data":`);
  // The server has read the partial body once it holds the request: let it, then cut the socket.
  await new Promise((resolve) => setTimeout(resolve, 200));
  cut.socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.deepEqual(lines.filter((line) => line.level >= 50), []);
  t.is(await app.getJobState('email', 'cut'), undefined);
});

test.serial('a request a page of another site makes is refused, except following a link; the dashboard\'s own requests are answered', async (t) => {
  const { admin } = await startAdminApp(t);
  const { request: httpRequest } = await import('node:http');
  const url = new URL(admin.url);
  const status = (method: string, path: string, fetchMetadata: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers: fetchMetadata }, (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      });
      req.on('error', reject);
      req.end();
    });
  const crossSite = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'empty' };
  t.is(await status('GET', '/api/jobs/email', crossSite), 403);
  t.is(await status('GET', '/api/events', { ...crossSite, 'sec-fetch-mode': 'cors' }), 403);
  // Another port of localhost is the same site, not the same origin.
  t.is(await status('GET', '/api/types', { ...crossSite, 'sec-fetch-site': 'same-site' }), 403);
  t.is(await status('POST', '/api/jobs/email/x', { ...crossSite, 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' }), 403);
  // A frame is a navigation too, but one the user does not see: another site's page could hold streams open or have jobs counted.
  t.is(await status('GET', '/api/events', { ...crossSite, 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'iframe' }), 403);
  t.is(await status('GET', '/api/jobs/email', { ...crossSite, 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'frame' }), 403);
  t.is(await status('GET', '/', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' }), 200);
  t.is(await status('GET', '/', { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' }), 200);
  t.is(await status('GET', '/api/events', { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' }), 200);
  t.is(await status('GET', '/api/status', {}), 200);
});

test.serial('a link planted where the token file is written does not receive the token', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'jobtree-admin-link-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const bait = join(dir, 'bait');
  writeFileSync(bait, '', { mode: 0o666 });
  symlinkSync(bait, join(dir, `${ADMIN_TOKEN_FILE}.${process.pid}.tmp`));
  const { admin } = await startAdminApp(t, { admin: { port: 0, dataDir: dir } });
  t.is(readFileSync(bait, 'utf8'), '');
  t.is(readAdminToken(dir), admin.token);
  t.is(statSync(join(dir, ADMIN_TOKEN_FILE)).mode & 0o777, 0o600);
  t.false(lstatSync(join(dir, ADMIN_TOKEN_FILE)).isSymbolicLink());
});
