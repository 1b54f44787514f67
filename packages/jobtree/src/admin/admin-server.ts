// The admin endpoint of a jobs app: a node:http server with the JSON API
// (admin-routes.ts), server-sent events (live-feed.ts), /metrics and the
// dashboard. Mutations need the app's token; nothing a client sends can
// crash the app: every failure is a JSON error answer.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { AdminSettings } from './admin-options.js';
import { removeAdminRecord, writeAdminRecord } from './admin-record.js';
import { type Route, type RouteSources, adminRoutes, errorAnswer } from './admin-routes.js';
import type { AppMetrics } from './app-metrics.js';
import { dashboardClient, dashboardPage } from './dashboard-page.js';
import { DashboardSessions } from './dashboard-sessions.js';
import { AdminError } from './errors.js';
import type { LiveFeed } from './live-feed.js';
import { isLoopbackAddress, isLoopbackHost } from './loopback.js';
import { readJsonBody } from './request-body.js';

export interface AdminServerParts extends Omit<RouteSources, 'sessions'> {
  settings: AdminSettings;
  feed: LiveFeed;
  metrics: AppMetrics;
  logger: Logger;
}

/** How long a client has to send its headers, and its whole request. */
export const HEADERS_TIMEOUT_MS = 10_000;
export const REQUEST_TIMEOUT_MS = 30_000;

/** Paths served outside the route table, all GET only. */
const STATIC_PATHS = new Set(['/', '/dashboard', '/dashboard/open', '/dashboard.js', '/metrics', '/api/events']);
/** The header the dashboard's script adds to its changes: a page of another origin cannot send it without a CORS preflight, which this endpoint never grants. */
const DASHBOARD_HEADER = 'x-jobtree-dashboard';
/** The dashboard holds the token: no other site may frame it and steer its kill and retry buttons. */
const PAGE_HEADERS = { 'content-security-policy': "frame-ancestors 'none'", 'x-frame-options': 'DENY' };

export class AdminServer {
  readonly #parts: AdminServerParts;
  readonly #routes: Route[];
  readonly #token: string;
  readonly #tokenDigest: Buffer;
  readonly #sessions = new DashboardSessions();
  readonly #server: Server;
  /** The responses of each connection that have not closed. */
  readonly #responses = new WeakMap<Socket, Set<ServerResponse>>();
  #url: string | undefined;
  /** Whether the endpoint is bound to a loopback address (then requests must name a loopback host). */
  #loopback = true;

  constructor(parts: AdminServerParts) {
    this.#parts = parts;
    this.#routes = adminRoutes({ ...parts, sessions: this.#sessions });
    this.#token = parts.settings.token ?? randomBytes(32).toString('base64url');
    this.#tokenDigest = digest(this.#token);
    this.#server = createServer(
      // A client that sends its request slowly holds a socket: its headers get
      // HEADERS_TIMEOUT_MS, the whole request REQUEST_TIMEOUT_MS (a stream's
      // open response is not part of its request, so streams stay open).
      { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 1_000 },
      (req, res) => {
        this.#track(req.socket, res);
        void this.#answer(req, res);
      },
    );
    // A malformed request line or header never reaches #answer: answer it here.
    this.#server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
      // Behind a response already under way (an event stream, an answer still
      // being sent) the connection is only closed: an answer written now
      // would be read as part of that response.
      if (!socket.writable || this.#responseUnderWay(socket)) return void socket.destroy();
      const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      const answer = timedOut
        ? new AdminError('request_timeout', `the request was not received within ${HEADERS_TIMEOUT_MS / 1000} s (headers) or ${REQUEST_TIMEOUT_MS / 1000} s (whole request)`)
        : new AdminError('bad_request', 'malformed HTTP request');
      const body = JSON.stringify({ error: { code: answer.code, message: answer.message } });
      // Let go of the socket once the answer is out: node:http keeps its sockets
      // half-open, so end() alone would leave it to a slow client to close.
      socket.end(`HTTP/1.1 ${answer.status} ${timedOut ? 'Request Timeout' : 'Bad Request'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`, () =>
        socket.destroy(),
      );
    });
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
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', (error) => reject(new AdminError('unavailable', `the admin endpoint cannot listen on ${host}:${port}: ${error.message}`, { cause: error })));
      this.#server.listen(port, host, () => {
        this.#server.removeAllListeners('error');
        resolve();
      });
    });
    const address = this.#server.address() as AddressInfo;
    // Decided from the address bound, not the name given: `localhost` or a
    // host name the system maps to 127.0.1.1 is loopback, `0.0.0.0` is not.
    this.#loopback = isLoopbackAddress(address.address);
    if (!this.#loopback) {
      this.#parts.logger.warn({ host }, 'the admin endpoint listens beyond loopback: anyone who reaches it can read the tree, the jobs and their data');
    }
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
      // HEAD is GET without the body (node:http leaves the body out).
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
      this.#checkHost(req);
      checkSite(req);
      if (STATIC_PATHS.has(path) && method !== 'GET') throw new AdminError('method_not_allowed', `${method} is not allowed on ${path}`, { allow: ['GET', 'HEAD'] });
      if (path === '/dashboard/open') return this.#openDashboard(res, url.searchParams.get('code') ?? '');
      if (path === '/' || path === '/dashboard') return send(res, 200, 'text/html; charset=utf-8', dashboardPage(), PAGE_HEADERS);
      if (path === '/dashboard.js') return send(res, 200, 'text/javascript; charset=utf-8', dashboardClient());
      if (path === '/metrics') return send(res, 200, this.#parts.metrics.contentType, await this.#parts.metrics.text());
      if (path === '/api/events') return req.method === 'HEAD' ? send(res, 200, 'text/event-stream; charset=utf-8', '') : this.#parts.feed.attach(res);
      const [route, params] = this.#route(method, path);
      if (route.mutates) this.#checkToken(req, route.tokenOnly !== true);
      const body = method === 'GET' || method === 'HEAD' ? {} : await readJsonBody(req);
      const result = await route.handle({ params, query: url.searchParams, body });
      sendJson(res, 200, result);
    } catch (error) {
      const { status, body } = errorAnswer(error);
      if (status >= 500) this.#parts.logger.error({ err: error, url: req.url }, 'admin request failed');
      if (res.headersSent) res.destroy();
      else sendJson(res, status, body, error instanceof AdminError && error.allow !== undefined ? { allow: error.allow.join(', ') } : {});
    }
  }

  #route(method: string, path: string): [Route, string[]] {
    const segments = path.split('/').filter(Boolean);
    const allowed: string[] = [];
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
      if (route.method === method) return [route, params];
      allowed.push(...(route.method === 'GET' ? ['GET', 'HEAD'] : [route.method]));
    }
    if (allowed.length > 0) throw new AdminError('method_not_allowed', `${method} is not allowed on ${path}`, { allow: allowed });
    throw new AdminError('not_found', `no route ${method} ${path} (GET /api lists them)`);
  }

  /**
   * On loopback, only requests addressed to a loopback name are answered: a
   * page from elsewhere whose domain was rebound to 127.0.0.1 sends its own
   * domain in Host, and so cannot read the tree or the jobs.
   */
  #checkHost(req: IncomingMessage): void {
    if (!this.#loopback) return;
    const host = req.headers.host ?? '';
    if (!isLoopbackHost(host)) throw new AdminError('forbidden', `this endpoint answers requests to a loopback name, not to ${JSON.stringify(host)}`);
  }

  #track(socket: Socket, res: ServerResponse): void {
    const open = this.#responses.get(socket) ?? new Set<ServerResponse>();
    this.#responses.set(socket, open);
    open.add(res);
    res.once('close', () => {
      open.delete(res);
      if (open.size === 0) this.#responses.delete(socket);
    });
  }

  /** Whether a response on this connection has sent its headers and not ended. */
  #responseUnderWay(socket: Socket): boolean {
    for (const res of this.#responses.get(socket) ?? []) if (res.headersSent) return true;
    return false;
  }

  /** Trades a dashboard code for a session cookie and sends the browser on to the dashboard, at a URL without the code. */
  #openDashboard(res: ServerResponse, code: string): void {
    const redeemed = this.#sessions.redeem(code);
    if ('refused' in redeemed) {
      throw new AdminError(
        'unauthorized',
        redeemed.refused === 'spent'
          ? 'this dashboard link was already used, by this browser or by someone who read it in the process list; the session it opened is ended: run `jobtree dashboard --open` again'
          : 'this dashboard link is unknown or expired (a code works once, for 60 s): run `jobtree dashboard --open` again',
      );
    }
    const { session, expiresInMs } = redeemed;
    res.writeHead(303, {
      location: '/',
      'set-cookie': `${this.#sessionCookie()}=${session}; Path=/; Max-Age=${Math.floor(expiresInMs / 1_000)}; HttpOnly; SameSite=Strict`,
      'cache-control': 'no-store',
      'content-length': 0,
    });
    res.end();
  }

  /** Cookies are kept per host, not per port: the port in the name keeps apps on one host from overwriting each other's session. */
  #sessionCookie(): string {
    return `jobtree_session_${this.#url === undefined ? '' : new URL(this.#url).port}`;
  }

  /** The token, or (`sessionPasses`) a dashboard session from this endpoint's cookie on a request carrying the dashboard's header. */
  #checkToken(req: IncomingMessage, sessionPasses: boolean): void {
    if (sessionPasses && req.headers[DASHBOARD_HEADER] === '1') {
      if (cookies(req.headers.cookie, this.#sessionCookie()).some((session) => this.#sessions.has(session))) return;
    }
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match === null || !timingSafeEqual(digest(match[1] as string), this.#tokenDigest)) {
      throw new AdminError('unauthorized', 'this request changes the app: send "Authorization: Bearer <token>" with the token from the data directory\'s admin.token');
    }
  }
}

/**
 * A browser says which site a request comes from (Fetch Metadata): a page of
 * another site may send the browser here as a link does, in plain view,
 * nothing more. Its scripts' reads, even ones whose answer they cannot see,
 * its event streams and its frames (navigations too, but unseen) never reach
 * a handler. Browsers that send no Fetch Metadata are not checked.
 */
function checkSite(req: IncomingMessage): void {
  const site = req.headers['sec-fetch-site'];
  if (site === undefined || site === 'same-origin' || site === 'none') return;
  const followsLink = req.headers['sec-fetch-mode'] === 'navigate' && req.headers['sec-fetch-dest'] === 'document' && req.method === 'GET';
  if (!followsLink) throw new AdminError('forbidden', `this endpoint answers no request a page of another site makes (sec-fetch-site: ${site})`);
}

/**
 * The values of cookie `name` in a Cookie header, all of them: any server on
 * the same host (another port) can set one of that name with a longer Path,
 * which the browser sends first.
 */
function cookies(header: string | undefined, name: string): string[] {
  const values: string[] = [];
  for (const part of (header ?? '').split(';')) {
    const equals = part.indexOf('=');
    if (equals > 0 && part.slice(0, equals).trim() === name) values.push(part.slice(equals + 1).trim());
  }
  return values;
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

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  send(res, status, 'application/json; charset=utf-8', `${JSON.stringify(value)}\n`, headers);
}

function send(res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'content-type': type, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  res.end(body);
}
