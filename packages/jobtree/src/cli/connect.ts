// Which backend a command talks to. `--url` names a running app; `--path`
// names a data directory: the app that owns it (found through the admin.json
// it records there) when one runs and answers, else the store itself.

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ADMIN_RECORD_FILE, processAlive, readAdminToken } from '../admin/admin-record.js';
import { AppClient, connectionRefused } from './app-client.js';
import type { Backend } from './backend.js';
import { CliError } from './cli-error.js';
import { readCheckedRecord } from './record-trust.js';
import { StoreBackend } from './store-backend.js';

export interface TargetOptions {
  path?: string;
  url?: string;
  token?: string;
  tokenFile?: string;
}

/** Where to look when neither --path nor --url is given. */
export function defaultPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.JOBTREE_PATH === undefined || env.JOBTREE_PATH === '' ? undefined : env.JOBTREE_PATH;
}

/**
 * The backend for the options. `needsApp`: the command cannot work on a
 * closed store (status works on both), so a missing app is an error rather
 * than a reason to open the store.
 */
export async function connect(options: TargetOptions, needsApp = false): Promise<Backend> {
  const token = givenToken(options);
  if (options.url !== undefined) {
    if (!/^https?:\/\//.test(options.url)) throw new CliError('usage', `--url is an http:// URL, got ${JSON.stringify(options.url)}`);
    const fromDir = options.path === undefined ? undefined : readAdminToken(resolve(options.path));
    return new AppClient(options.url, token ?? fromDir);
  }
  const given = options.path ?? defaultPath();
  if (given === undefined) throw new CliError('usage', 'say which app: --path DIR (its data directory) or --url URL (its admin endpoint), or set JOBTREE_PATH');
  const path = resolve(given);
  const { record, trustProblem } = readCheckedRecord(path);
  if (record !== undefined && processAlive(record.pid)) {
    const recordToken = token ?? readAdminToken(path);
    const problem = recordToken === undefined ? undefined : trustProblem;
    // Reads carry no token and still go to the recorded endpoint; a change is refused before anything is sent.
    const refusal = problem === undefined ? undefined : `not sending the token to ${record.url}: ${problem}; whoever can write the record can point it at their own server. Make it writable by its owner only (chmod go-w ${path} ${join(path, ADMIN_RECORD_FILE)}), or name the endpoint with --url`;
    const client = new AppClient(record.url, recordToken, refusal);
    try {
      await client.status();
      return client;
    } catch (error) {
      // An app that is there but does not answer is reported, never bypassed: the store is its.
      if (!connectionRefused(error)) {
        const recordPath = join(path, ADMIN_RECORD_FILE);
        throw error instanceof CliError && error.code === 'unreachable'
          ? new CliError('unreachable', `${error.message}: the app recorded in ${recordPath} (pid ${record.pid}); if that process is not the app any more, remove ${recordPath}`, { cause: error })
          : error;
      }
      // Nothing listens where the record says: its pid is another process's now (the app
      // died and the pid was reused). The store is opened as below: openJobs makes this
      // command a client of whichever process owns it, if one does.
    }
  }
  if (needsApp) throw new CliError('no_app', `no app is running on ${path} (an app records its admin endpoint there when started with the admin option)`);
  return StoreBackend.open(path);
}

/**
 * The token given for changes, first found of: --token (which every user of
 * the machine can read in the process list), --token-file, JOBTREE_TOKEN,
 * JOBTREE_TOKEN_FILE; else undefined (the data directory's admin.token is used).
 */
export function givenToken(options: TargetOptions, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (options.token !== undefined) return options.token;
  if (options.tokenFile !== undefined) return readTokenFile(options.tokenFile, '--token-file');
  const fromEnv = nonEmpty(env.JOBTREE_TOKEN);
  if (fromEnv !== undefined) return fromEnv;
  const file = nonEmpty(env.JOBTREE_TOKEN_FILE);
  return file === undefined ? undefined : readTokenFile(file, 'JOBTREE_TOKEN_FILE');
}

function readTokenFile(file: string, source: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError('usage', `cannot read the token file ${file} (${source}): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, { cause: error });
  }
  const token = text.trim();
  if (token === '') throw new CliError('usage', `the token file ${file} (${source}) is empty`);
  return token;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
