// The dashboard end to end in headless Chromium (Debian's chromium driven by
// playwright-core): the tree renders, a job added through the API appears
// without a reload, a kill button restarts the actor on screen, the scheduler
// view shows while the app runs processors and goes when they stop, killing jobs_sup or core
// asks first, and a failed job shows its error and history and runs again
// from its retry button; a type's pause button pauses it and resumes it, and
// the schedules table lists the schedules; a browser signed in by a
// dashboard code changes the app without the token.
// Screenshots go to test/dashboard/screenshots/ (ignored by git).

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { type Browser, type Page, chromium } from 'playwright-core';
import { request, startAdminApp } from '../admin/fixtures/admin-app.js';
import crashOnce from '../app/fixtures/crash-once-handler.js';
import failsUntilFixed from './fixtures/fails-until-fixed-handler.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const CHROMIUM = '/usr/bin/chromium';
const INSTALL = fileURLToPath(new URL('../../scripts/install-chromium.sh', import.meta.url));
const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const WAIT_MS = 30_000;

/** Installs chromium with the project's script when it is missing; the reason when it cannot. */
function chromiumMissing(): string | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  try {
    execFileSync('bash', [INSTALL], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim();
    return `scripts/install-chromium.sh failed: ${stderr.split('\n').at(-1) ?? (error as Error).message}`;
  }
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is still missing after scripts/install-chromium.sh`;
}

const missing = chromiumMissing();
if (missing !== undefined) {
  console.log(`dashboard tests skipped: ${missing}`);
  test.skip('the dashboard in headless Chromium', () => {});
} else {
  let browser: Browser | undefined;
  test.before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true, timeout: 60_000 });
  });
  /** A page in a browser context of its own, closed with the test; `problems`: the page's uncaught errors. */
  async function openPage(t: ExecutionContext): Promise<{ page: Page; problems: string[] }> {
    if (browser === undefined) throw new Error('no browser');
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    t.teardown(() => context.close());
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    return { page, problems };
  }
  test.after.always(async () => {
    await browser?.close();
  });

  test.serial('the tree renders, an added job appears, a kill restarts the actor on screen, the scheduler view shows while processors run', async (t) => {
    t.timeout(180_000);
    const { app, admin } = await startAdminApp(t, { admin: { port: 0, refreshMs: 200 } });
    const { page, problems } = await openPage(t);
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
    });

    await page.goto(`${admin.url}/#token=${encodeURIComponent(admin.token)}`);
    // The tree: every system place, with the per-type children of the type.
    for (const name of ['jobs_sup', 'core', 'user_sup', 'activity_monitor_sup', 'notifier_sup', 'jobs_server', 'notifier:email', 'activity_monitor:email', 'type_monitor:email']) {
      await page.locator(`[data-actor="${name}"]`).waitFor({ timeout: WAIT_MS });
    }
    t.is(await page.locator('[data-actor="notifier:email"]').getAttribute('data-id'), app.system.whereis('notifier:email') ?? null);
    t.is(await page.locator('#conn').textContent(), 'live');
    t.false(page.url().includes('token='), 'the token leaves the address bar');
    await page.screenshot({ path: `${SHOTS}1-tree.png`, fullPage: true });

    // A job added through the API appears in the queue and in the job list, without a reload.
    const added = await request(`${admin.url}/api/jobs/email/welcome-1`, 'POST', { token: admin.token, body: { data: { to: 'ada@example.com' }, priority: 2 } });
    t.is(added.status, 200);
    await page.locator('tr[data-job="welcome-1"]').waitFor({ timeout: WAIT_MS });
    await page.locator('tr[data-queue="email"] td[data-count="pending"]', { hasText: '1' }).waitFor({ timeout: WAIT_MS });
    await page.locator('tr[data-job="welcome-1"]').click();
    await page.locator('#job-data', { hasText: 'ada@example.com' }).waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: `${SHOTS}2-job-added.png`, fullPage: true });

    // The kill button on notifier:email: jobs_server is restarted and re-creates the notifier, on screen.
    const before = app.system.whereis('notifier:email');
    await page.locator('button[data-kill="notifier:email"]').click();
    // Evaluated in the page: a string, so that this file needs no DOM types.
    await page.waitForFunction(
      `(() => { const id = document.querySelector('[data-actor="notifier:email"]')?.getAttribute('data-id'); return !!id && id !== ${JSON.stringify(before)}; })()`,
      undefined,
      { timeout: WAIT_MS },
    );
    await page.locator('[data-actor="jobs_server"][data-restarts="1"]').waitFor({ timeout: WAIT_MS });
    t.not(app.system.whereis('notifier:email'), before);
    t.is(await page.locator('[data-actor="notifier:email"]').getAttribute('data-id'), app.system.whereis('notifier:email') ?? null);
    t.true((await page.locator('[data-actor="jobs_server"].flash').count()) + (await page.locator('[data-actor="notifier:email"].flash').count()) > 0, 'a restarted place flashes');
    await page.screenshot({ path: `${SHOTS}3-after-kill.png`, fullPage: true });

    // A supervisor's restart counter on screen.
    await page.locator('button[data-kill="activity_monitor_sup"]').click();
    await page.locator('[data-actor="activity_monitor_sup"][data-restarts="1"]').waitFor({ timeout: WAIT_MS });

    // No app.process yet: no scheduler, so no scheduler view (the feed has refreshed many times by now).
    t.true(await page.locator('#scheduler-section').isHidden(), 'no scheduler view before the first app.process');

    // The scheduler view, once the app has a scheduler.
    const summary = { id: 'welcome-1', type: 'email', state: 'running', info: null, error_count: 0, pid: '3', node: 'local', continuous: false, start_time: new Date().toISOString(), last_updated: new Date().toISOString(), history: [{ timestamp: new Date().toISOString(), type: 'started' }] };
    Object.defineProperty(app, 'scheduler', {
      configurable: true,
      value: {
        stats: () => ({ email: { total: 1, pending: 0, running: 1, crashed: 0, averageAgeSeconds: { pending: 0, running: 1, crashed: 0 } } }),
        jobs: () => ({ total_rows: 1, offset: 0, jobs: [summary] }),
        job: (type: string, id: string) => (type === 'email' && id === 'welcome-1' ? summary : undefined),
      },
    });
    await page.locator('#scheduler-section:not([hidden]) tr[data-scheduler-job="welcome-1"]').waitFor({ timeout: WAIT_MS });
    t.regex((await page.locator('#scheduler-stats').textContent()) ?? '', /email: 1 running/);
    await page.screenshot({ path: `${SHOTS}4-scheduler.png`, fullPage: true });
    // Every processor stopped: the view holds no type, and the page drops the scheduler.
    Object.defineProperty(app, 'scheduler', {
      configurable: true,
      value: { stats: () => ({}), jobs: () => ({ total_rows: 0, offset: 0, jobs: [] }), job: () => undefined },
    });
    await page.locator('#scheduler-section[hidden]').waitFor({ state: 'attached', timeout: WAIT_MS });

    t.deepEqual(problems, []);
  });

  test.serial('killing jobs_sup or core asks first and says what happens; dismissed, nothing is killed; accepted, the app stops', async (t) => {
    t.timeout(180_000);
    const { app, admin } = await startAdminApp(t, { admin: { port: 0, refreshMs: 200 } });
    const { page } = await openPage(t);
    const asked: string[] = [];
    let answer: 'dismiss' | 'accept' = 'dismiss';
    page.on('dialog', (dialog) => {
      asked.push(`${dialog.type()}: ${dialog.message()}`);
      void (answer === 'accept' ? dialog.accept() : dialog.dismiss());
    });
    await page.goto(`${admin.url}/#token=${encodeURIComponent(admin.token)}`);
    await page.locator('button[data-kill="jobs_sup"]').waitFor({ timeout: WAIT_MS });
    const root = app.system.whereis('jobs_sup');
    const core = app.system.whereis('core');

    await page.locator('button[data-kill="core"]').click();
    t.is(asked.length, 1);
    t.regex(asked[0] ?? '', /^confirm: Kill core\?[\s\S]*restarts core[\s\S]*stop the whole app/);
    await page.locator('button[data-kill="jobs_sup"]').click();
    t.is(asked.length, 2);
    t.regex(asked[1] ?? '', /^confirm: Kill jobs_sup[\s\S]*the whole app stops/);
    t.is(app.system.whereis('core'), core, 'a dismissed kill kills nothing');
    t.is(app.system.whereis('jobs_sup'), root);

    // Other actors are killed without a question.
    await page.locator('button[data-kill="notifier_sup"]').click();
    await page.locator('[data-actor="notifier_sup"][data-restarts="1"]').waitFor({ timeout: WAIT_MS });
    t.is(asked.length, 2);
    // The restart leaves the app running: stopped, it would have no jobs_sup to kill (its button gone), and this says why.
    t.is(await Promise.race([app.stopped, undefined]), undefined, 'the app still runs after notifier_sup restarted');
    t.is(app.system.whereis('jobs_sup'), root);

    answer = 'accept';
    await page.locator('button[data-kill="jobs_sup"]').click();
    t.like(await app.stopped, { cause: 'root_exited', reason: 'killed' });
    await page.locator('#toast', { hasText: 'the app stopped' }).waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: `${SHOTS}5-root-killed.png`, fullPage: true });
  });

  test.serial('the queues show the jobs succeeded, the runs crashed and the jobs failed since the app started', async (t) => {
    t.timeout(180_000);
    // 60 times real time: the crashed run's 30-second backoff lasts half a second.
    const { app, admin } = await startAdminApp(t, { admin: { port: 0, refreshMs: 200 }, clockSpeed: 60 }, { email: 30, sms: 30 });
    const { page } = await openPage(t);
    await page.goto(`${admin.url}/#token=${encodeURIComponent(admin.token)}`);

    await app.process('email', crashOnce, { threads: 1 });
    await app.add('email', 'once', null);
    await app.add('sms', 'doomed', {});
    const job = await app.accept('sms', { timeout: 5_000 });
    if (job === undefined) throw new Error('no job');
    await app.jobs.fail(job, new Error('given up by hand'));

    const total = (type: string, name: string, value: string) => page.locator(`tr[data-queue="${type}"] td[data-total="${name}"]`, { hasText: new RegExp(`^${value}$`) });
    await total('email', 'finished', '1').waitFor({ timeout: WAIT_MS });
    await total('email', 'crashed', '1').waitFor({ timeout: WAIT_MS });
    await total('email', 'failed', '0').waitFor({ timeout: WAIT_MS });
    await total('sms', 'finished', '0').waitFor({ timeout: WAIT_MS });
    await total('sms', 'failed', '1').waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: `${SHOTS}6-run-outcomes.png`, fullPage: true });
    t.pass();
  });

  test.serial('a failed job shows its error and history; its retry button runs it again and it leaves the failed list', async (t) => {
    t.timeout(180_000);
    const { app, admin, dir } = await startAdminApp(t, { admin: { port: 0, refreshMs: 200 } });
    const { page, problems } = await openPage(t);
    await page.goto(`${admin.url}/#token=${encodeURIComponent(admin.token)}`);

    await app.process('email', failsUntilFixed, { threads: 1, attempts: 1 });
    await app.add('email', 'welcome-9', { dir });
    const row = page.locator('#failed tr[data-failed-job="welcome-9"]');
    await row.waitFor({ timeout: WAIT_MS });
    t.regex((await row.textContent()) ?? '', /Error: the mail server refused the message/);
    await row.click();
    await page.locator('#job-error', { hasText: 'the mail server refused the message' }).waitFor({ timeout: WAIT_MS });
    await page.locator('#job-history', { hasText: 'crashed' }).waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: `${SHOTS}7-failed-job.png`, fullPage: true });

    // The bug is fixed; the button runs the job again with its input, and it succeeds.
    await writeFile(join(dir, 'fixed'), '');
    await row.locator('button[data-retry="welcome-9"]').click();
    await row.waitFor({ state: 'detached', timeout: WAIT_MS });
    await page.locator('#failed-empty:not([hidden])').waitFor({ timeout: WAIT_MS });
    for (const deadline = Date.now() + WAIT_MS; (await app.getJob('email', 'welcome-9'))?.outcome !== 'succeeded' && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    t.like(await app.getJob('email', 'welcome-9'), { outcome: 'succeeded', result: { fixed: true }, data: { dir } });
    await page.screenshot({ path: `${SHOTS}8-retried.png`, fullPage: true });
    t.deepEqual(problems, []);
  });

  test.serial("a flow job's detail shows its flow as a tree, each job a link to its own detail", async (t) => {
    t.timeout(180_000);
    const { app, admin } = await startAdminApp(t, { admin: { port: 0, refreshMs: 200 } });
    const { page, problems } = await openPage(t);
    await app.addFlow({
      type: 'email',
      id: 'digest',
      onChildFailure: 'ignore',
      children: [{ type: 'email', id: 'part-1' }, { type: 'email', id: 'part-2', children: [{ type: 'email', id: 'part-2a' }] }],
    });
    await app.cancel('email', 'part-1');
    await page.goto(`${admin.url}/#token=${encodeURIComponent(admin.token)}`);
    await page.locator('tr[data-job="digest"]').click();
    const tree = page.locator('#job-flow');
    await tree.locator('li[data-job="email/part-2a"]').waitFor({ timeout: WAIT_MS });
    t.regex((await tree.locator('li[data-job="email/digest"] > span').first().textContent()) ?? '', /waiting · waits for 1 \(ignore/);
    t.regex((await tree.locator('li[data-job="email/part-1"] > span').first().textContent()) ?? '', /finished · cancelled/);
    await page.screenshot({ path: `${SHOTS}11-flow.png`, fullPage: true });
    // A child's link shows the child, with its parent.
    await tree.locator('li[data-job="email/part-2"] > a').click();
    await page.locator('#job-title', { hasText: 'email / part-2' }).waitFor({ timeout: WAIT_MS });
    await page.locator('#job-detail p', { hasText: 'parent email / digest' }).waitFor({ timeout: WAIT_MS });
    t.deepEqual(problems, []);
  });

  test.serial("a type's pause button pauses it in the store, and its resume button resumes it; a pause made elsewhere shows; the schedules table lists the schedules", async (t) => {
    t.timeout(180_000);
    const { app, admin } = await startAdminApp(t, { admin: { port: 0, refreshMs: 200 } });
    const { page, problems } = await openPage(t);
    await page.goto(`${admin.url}/#token=${encodeURIComponent(admin.token)}`);
    await page.locator('button[data-pause="email"]', { hasText: 'pause' }).click();
    await page.locator('button[data-pause="email"]', { hasText: 'resume' }).waitFor({ timeout: WAIT_MS });
    t.true(await app.isPaused('email'));
    await page.screenshot({ path: `${SHOTS}9-paused.png`, fullPage: true });
    await page.locator('button[data-pause="email"]', { hasText: 'resume' }).click();
    await page.locator('button[data-pause="email"]', { hasText: 'pause' }).waitFor({ timeout: WAIT_MS });
    t.false(await app.isPaused('email'));
    // Paused by another hand (the API, the CLI, another process): the live feed shows it.
    await app.pause('email');
    await page.locator('button[data-pause="email"]', { hasText: 'resume' }).waitFor({ timeout: WAIT_MS });
    // The schedules table: a schedule set now shows with its next tick.
    const nightly = await app.schedule('nightly', '0 2 * * *', { type: 'email', timezone: 'Europe/Berlin' });
    await page.locator('tr[data-schedule="nightly"]', { hasText: '0 2 * * * (Europe/Berlin)' }).waitFor({ timeout: WAIT_MS });
    t.is(await page.locator('tr[data-schedule="nightly"] td[data-tick="next"]').textContent(), new Date(nightly.nextTick!).toISOString().replace('.000Z', 'Z'));
    await page.screenshot({ path: `${SHOTS}10-schedules.png`, fullPage: true });
    t.deepEqual(problems, []);
  });

  test.serial('signed in by a dashboard code, the page drops the code from the address bar and its buttons change the app without asking for the token; without a session it asks', async (t) => {
    t.timeout(180_000);
    const { app, admin } = await startAdminApp(t, { admin: { port: 0, refreshMs: 200 } });
    const { page, problems } = await openPage(t);
    const asked: string[] = [];
    page.on('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept(admin.token);
    });
    const issued = await request(`${admin.url}/api/dashboard/codes`, 'POST', { token: admin.token });
    const { path } = issued.body as { path: string };
    await page.goto(`${admin.url}${path}`);
    t.is(page.url(), `${admin.url}/`, 'the code leaves the address bar');
    await page.locator('button[data-pause="email"]', { hasText: 'pause' }).click();
    await page.locator('button[data-pause="email"]', { hasText: 'resume' }).waitFor({ timeout: WAIT_MS });
    t.true(await app.isPaused('email'));
    t.deepEqual(asked, [], 'the session cookie stood for the token');
    const cookies = await page.context().cookies();
    t.like(cookies.find((each) => each.name.startsWith('jobtree_session_')), { httpOnly: true, sameSite: 'Strict' });

    // Another browser, not signed in: the page asks for the token, then the change goes through.
    if (browser === undefined) throw new Error('no browser');
    const other = await browser.newContext();
    t.teardown(() => other.close());
    const fresh = await other.newPage();
    fresh.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    fresh.on('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept(admin.token);
    });
    await fresh.goto(`${admin.url}/`);
    await fresh.locator('button[data-pause="email"]', { hasText: 'resume' }).click();
    await fresh.locator('button[data-pause="email"]', { hasText: 'pause' }).waitFor({ timeout: WAIT_MS });
    t.false(await app.isPaused('email'));
    t.is(asked.length, 1);
    t.regex(asked[0] ?? '', /^Token/);
    t.deepEqual(problems, []);
  });
}
