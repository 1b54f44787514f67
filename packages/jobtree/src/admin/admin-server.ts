// The admin endpoint of a jobs app: a node:http server with the JSON API
// (admin-routes.ts), server-sent events (live-feed.ts), /metrics and the
// dashboard. Mutations need the app's token; nothing a client sends can
// crash the app: every failure is a JSON error answer.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { AdminSettings } from './admin-options.js';
import { removeAdminRecord, writeAdminRecord } from './admin-record.js';
import { type Route, type RouteSources, adminRoutes, errorAnswer } from './admin-routes.js';
import type { AppMetrics } from './app-metrics.js';
import { dashboardClient, dashboardPage } from './dashboard-page.js';
import { AdminError } from './errors.js';
import type { LiveFeed } from './live-feed.js';
import { readJsonBody } from './request-body.js';

export interface AdminServerParts extends RouteSources {
  settings: AdminSettings;
  feed: LiveFeed;
  metrics: AppMetrics;
  logger: Logger;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
/** Host header names that mean this machine. */
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

export class AdminServer {
  readonly #parts: AdminServerParts;
  readonly #routes: Route[];
  readonly #token: string;
  readonly #tokenDigest: Buffer;
  readonly #server: Server;
  #url: string | undefined;

  constructor(parts: AdminServerParts) {
    this.#parts = parts;
    this.#routes = adminRoutes(parts);
    this.#token = parts.settings.token ?? randomBytes(32).toString('base64url');
    this.#tokenDigest = digest(this.#token);
    this.#server = createServer((req, res) => void this.#answer(req, res));
    // A malformed request line or header never reaches #answer: answer it here.
    this.#server.on('clientError', (_error, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"error":{"code":"bad_request","message":"malformed HTTP request"}}');
      else socket.destroy();
    });
    // Streams stay open for ever; plain requests need no timeout of their own on a local endpoint.
    this.#server.requestTimeout = 0;
    this.#server.keepAliveTimeout = 5_000;
  }

  /** The base URL, e.g. `http://127.0.0.1:7070`, once listening. */
  get url(): string {
    if (this.#url === undefined) throw new AdminError('unavailable', 'the admin endpoint is not listening');
    return this.#url;
  }

  /** The token mutating requests need. */
  get token(): string {
    return this.#token;
  }

  async listen(): Promise<void> {
    const { host, port, dataDir } = this.#parts.settings;
    if (!LOOPBACK.has(host)) {
      this.#parts.logger.warn({ host }, 'the admin endpoint listens beyond loopback: anyone who reaches it can read the tree, the jobs and their data');
    }
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', (error) => reject(new AdminError('unavailable', `the admin endpoint cannot listen on ${host}:${port}: ${error.message}`, { cause: error })));
      this.#server.listen(port, host, () => {
        this.#server.removeAllListeners('error');
        resolve();
      });
    });
    const address = this.#server.address() as AddressInfo;
    const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    this.#url = `http://${shownHost}:${address.port}`;
    if (dataDir !== undefined) {
      writeAdminRecord(dataDir, { url: this.#url, host: address.address, port: address.port, pid: this.#parts.pid, startedAt: this.#parts.startedAt }, this.#token);
    }
    this.#parts.logger.info({ url: this.#url }, 'admin endpoint listening');
  }

  async close(): Promise<void> {
    if (this.#parts.settings.dataDir !== undefined) removeAdminRecord(this.#parts.settings.dataDir, this.#parts.pid);
    this.#parts.feed.close();
    if (!this.#server.listening) return;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  async #answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? '/', 'http://admin.invalid');
      const path = url.pathname.replace(/\/+$/, '') || '/';
      const method = req.method ?? 'GET';
      this.#checkHost(req);
      if (method === 'GET' && (path === '/' || path === '/dashboard')) return send(res, 200, 'text/html; charset=utf-8', dashboardPage());
      if (method === 'GET' && path === '/dashboard.js') return send(res, 200, 'text/javascript; charset=utf-8', dashboardClient());
      if (method === 'GET' && path === '/metrics') return send(res, 200, this.#parts.metrics.contentType, await this.#parts.metrics.text());
      if (method === 'GET' && path === '/api/events') return this.#parts.feed.attach(res);
      const [route, params] = this.#route(method, path);
      if (route.mutates) this.#checkToken(req);
      const body = method === 'GET' || method === 'HEAD' ? {} : await readJsonBody(req);
      const result = await route.handle({ params, query: url.searchParams, body });
      sendJson(res, 200, result);
    } catch (error) {
      const { status, body } = errorAnswer(error);
      if (status >= 500) this.#parts.logger.error({ err: error, url: req.url }, 'admin request failed');
      if (res.headersSent) res.destroy();
      else sendJson(res, status, body);
    }
  }

  #route(method: string, path: string): [Route, string[]] {
    const segments = path.split('/').filter(Boolean);
    let pathMatched = false;
    for (const route of this.#routes) {
      const pattern = route.path.split('/');
      if (pattern.length !== segments.length) continue;
      const params: string[] = [];
      let matches = true;
      for (let i = 0; i < pattern.length && matches; i++) {
        const want = pattern[i] as string;
        const got = segments[i] as string;
        if (want.startsWith(':')) params.push(decodeSegment(got));
        else matches = want === got;
      }
      if (!matches) continue;
      pathMatched = true;
      if (route.method === method) return [route, params];
    }
    if (pathMatched) throw new AdminError('method_not_allowed', `${method} is not allowed on ${path}`);
    throw new AdminError('not_found', `no route ${method} ${path} (GET /api lists them)`);
  }

  /**
   * On loopback, only requests addressed to a loopback name are answered: a
   * page from elsewhere whose domain was rebound to 127.0.0.1 sends its own
   * domain in Host, and so cannot read the tree or the jobs.
   */
  #checkHost(req: IncomingMessage): void {
    if (!LOOPBACK.has(this.#parts.settings.host)) return;
    const host = (req.headers.host ?? '').toLowerCase();
    const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
    if (!LOOPBACK_NAMES.has(name)) throw new AdminError('forbidden', `this endpoint answers requests to a loopback name, not to ${JSON.stringify(host)}`);
  }

  #checkToken(req: IncomingMessage): void {
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match === null || !timingSafeEqual(digest(match[1] as string), this.#tokenDigest)) {
      throw new AdminError('unauthorized', 'this request changes the app: send "Authorization: Bearer <token>" with the token from the data directory\'s admin.token');
    }
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new AdminError('bad_request', `malformed URL segment ${JSON.stringify(segment)}`);
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', `${JSON.stringify(value)}\n`);
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}
