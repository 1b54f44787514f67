// The operations options of `startJobs` (admin endpoint and logs), their
// defaults and their validation.

import { isAbsolute, resolve } from 'node:path';
import { JobsError, OptionNames } from '@jobtree/core';
import type { Logger } from 'pino';

/** pino's levels, plus `silent`. */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface AdminOptions {
  /** TCP port of the admin endpoint; 0 picks a free one (see `app.admin.url`). */
  port: number;
  /**
   * Interface to listen on. Anything but loopback exposes the tree, the jobs
   * and their data to the network (mutations still need the token): the app
   * logs a warning.
   * @default '127.0.0.1'
   */
  host?: string;
  /**
   * Where the endpoint records its address (`admin.json`) and its token
   * (`admin.token`, mode 0600) for the `jobtree` command.
   * @default the embedded store's `path`; none for FoundationDB or a database you opened
   */
  dataDir?: string;
  /**
   * How often live views (server-sent events) and queue gauges are
   * refreshed while someone watches, in ms. Counting a type's jobs reads
   * all of them once per refresh.
   * @default 1000
   */
  refreshMs?: number;
  /**
   * The token mutations need (`Authorization: Bearer <token>`).
   * @default 32 random bytes, base64url, made at every start
   */
  token?: string;
}

export interface OperationsOptions {
  /** Serve the admin endpoint (JSON API, server-sent events, /metrics, dashboard). @default off */
  admin?: AdminOptions;
  /**
   * Level of the app's own logs (restarts, crashes, re-enqueues, restart
   * intensity reached), written as JSON lines to stderr by pino.
   * @default the JOBTREE_LOG_LEVEL environment variable, else 'silent' under a test runner (NODE_ENV=test or ava), else 'info'
   */
  logLevel?: LogLevel;
  /** A pino logger of yours to log to instead (its level applies; `logLevel` is then ignored). */
  logger?: Logger;
}

export interface AdminSettings {
  port: number;
  host: string;
  dataDir: string | undefined;
  refreshMs: number;
  token: string | undefined;
}

export interface OperationsSettings {
  admin: AdminSettings | undefined;
  logLevel: LogLevel;
  logger: Logger | undefined;
}

export const OPERATIONS_OPTION_NAMES: ReadonlySet<string> = new Set(['admin', 'logLevel', 'logger']);
const LOG_LEVELS = new Set<string>(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
const ADMIN_OPTIONS = new OptionNames('startJobs option admin', ['port', 'host', 'dataDir', 'refreshMs', 'token']);

/** Checks the operations options; `storePath` is the embedded store's directory, if any. */
export function checkOperationsOptions(given: Record<string, unknown>, storePath: unknown): OperationsSettings {
  const logLevel = given.logLevel ?? defaultLogLevel();
  if (typeof logLevel !== 'string' || !LOG_LEVELS.has(logLevel)) {
    throw new JobsError('invalid_option', `startJobs option logLevel is one of ${[...LOG_LEVELS].join(', ')}, got ${show(logLevel)}`);
  }
  const logger = given.logger;
  if (logger !== undefined && (typeof logger !== 'object' || logger === null || typeof (logger as { child?: unknown }).child !== 'function')) {
    throw new JobsError('invalid_option', 'startJobs option logger is a pino logger');
  }
  return {
    admin: given.admin === undefined ? undefined : checkAdmin(given.admin, storePath),
    logLevel: logLevel as LogLevel,
    logger: logger as Logger | undefined,
  };
}

function checkAdmin(admin: unknown, storePath: unknown): AdminSettings {
  if (typeof admin !== 'object' || admin === null || Array.isArray(admin)) {
    throw new JobsError('invalid_option', `startJobs option admin is { port, host?, dataDir?, refreshMs?, token? }, got ${show(admin)}`);
  }
  const options = admin as Record<string, unknown>;
  ADMIN_OPTIONS.check(options);
  const { port, host = '127.0.0.1', dataDir, refreshMs = 1000, token } = options;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new JobsError('invalid_option', `admin.port is an integer from 0 to 65535, got ${show(port)}`);
  }
  if (typeof host !== 'string' || host === '') throw new JobsError('invalid_option', `admin.host is a host name or address, got ${show(host)}`);
  if (typeof refreshMs !== 'number' || !Number.isFinite(refreshMs) || refreshMs < 10) {
    throw new JobsError('invalid_option', `admin.refreshMs is a number >= 10, got ${show(refreshMs)}`);
  }
  if (token !== undefined && (typeof token !== 'string' || token.length < 16)) {
    throw new JobsError('invalid_option', 'admin.token is a string of at least 16 characters');
  }
  if (dataDir !== undefined && (typeof dataDir !== 'string' || dataDir === '')) {
    throw new JobsError('invalid_option', `admin.dataDir is a directory path, got ${show(dataDir)}`);
  }
  const dir = dataDir ?? (typeof storePath === 'string' ? storePath : undefined);
  return { port, host, dataDir: dir === undefined ? undefined : isAbsolute(dir) ? dir : resolve(dir), refreshMs, token: token as string | undefined };
}

/** Quiet under a test runner, so test output stays readable; JOBTREE_LOG_LEVEL overrides. */
function defaultLogLevel(): string {
  const fromEnv = process.env.JOBTREE_LOG_LEVEL;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const underTests = process.env.NODE_ENV === 'test' || process.argv.some((arg) => /[\\/]ava[\\/]/.test(arg)) || process.env.AVA_WORKER_ID !== undefined;
  return underTests ? 'silent' : 'info';
}

function show(value: unknown): string {
  try {
    return typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}
