// Every loopback form the endpoint can be bound to (any 127/8 address, the
// IPv4-mapped IPv6 form, ::1) gets the Host check that keeps a rebound
// domain out; a request naming the bound address itself is answered.

import { request as httpRequest } from 'node:http';
import test from 'ava';
import { startAdminApp } from './fixtures/admin-app.js';

function statusWithHost(url: string, host: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise<number>((resolve, reject) => {
    const req = httpRequest({ host: hostname.replace(/^\[|\]$/g, ''), port, path: '/api/status', headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

for (const host of ['127.0.0.2', '127.1.2.3', '::ffff:127.0.0.1', '::1']) {
  test.serial(`bound to ${host}, a request naming another host is refused and one naming the bound address is answered`, async (t) => {
    const { admin } = await startAdminApp(t, { admin: { port: 0, host } });
    const port = new URL(admin.url).port;
    t.is(await statusWithHost(admin.url, 'evil.example'), 403);
    t.is(await statusWithHost(admin.url, `evil.example:${port}`), 403);
    t.is(await statusWithHost(admin.url, new URL(admin.url).host), 200);
    t.is(await statusWithHost(admin.url, `localhost:${port}`), 200);
  });
}

test.serial('bound to 127.0.0.2, the endpoint logs no warning about listening beyond loopback', async (t) => {
  const warnings: string[] = [];
  const { pino } = await import('pino');
  const { Writable } = await import('node:stream');
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) warnings.push((JSON.parse(line) as { msg: string }).msg);
      done();
    },
  });
  await startAdminApp(t, { admin: { port: 0, host: '127.0.0.2' }, logger: pino({ level: 'warn' }, sink) });
  t.false(warnings.some((msg) => /beyond loopback/.test(msg)), warnings.join('\n'));
});
