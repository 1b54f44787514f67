// How a process takes part in an embedded store that several processes of
// one machine use. The process that takes the data directory's lock owns
// the store: it opens the database and serves the others on the store's
// socket. A process that finds the lock taken connects to that socket
// instead, as a client. The kernel's lock arbitrates every race (see
// directory-lock.ts), so there is never a second owner, and a socket file
// is never trusted for who owns: a stale one simply refuses connections.
//
// When the owner goes away (closes, exits, is killed), each client tries the
// lock again: one takes it and becomes the owner, the others connect to it.

import { DatabaseLockedError, JobsError } from '../errors.js';
import type { Database, StoreDurability } from '../storage/interfaces.js';
import { openDatabase } from '../storage/open-database.js';
import type { StoreRole } from '../jobs/jobs.js';
import { ConnectRefused, OwnerConnection } from './owner-connection.js';
import { checkPrivate, storeSocket } from './socket-path.js';
import { type ServedMethod, StoreServer } from './store-server.js';

/** Which role a process may take. */
export type StoreRoleOption = 'auto' | 'owner' | 'client';

export interface StoreSharingOptions {
  path: string;
  /**
   * `auto`: own the store when its lock is free, be a client otherwise, and
   * take over when the owner goes. `owner`: own it or fail with
   * DatabaseLockedError. `client`: never own it, only connect.
   * @default 'auto'
   */
  role?: StoreRoleOption;
  /**
   * How long to wait for an owner to serve the store (one that holds the
   * lock but is still starting, or a successor taking over) before a call
   * fails.
   * @default 10000
   */
  ownerWaitMs?: number;
  /**
   * The store's durability while this process owns it (taking it over
   * included); a client's calls get its owner's.
   * @default 'flush'
   */
  durability?: StoreDurability;
}

/** What a process did when the owner changed. */
export type RoleChange = { role: 'owner'; database: Database } | { role: 'client'; ownerPid: number };

const RETRY_FIRST_MS = 5;
const RETRY_MAX_MS = 200;
/**
 * The least time a connect waits for the owner's welcome, however close the
 * caller's deadline: an owner answers in the turn it reads the hello, but a
 * busy event loop may take that long to get to it.
 */
const MIN_WELCOME_WAIT_MS = 1_000;

export class StoreSharing {
  readonly #path: string;
  readonly #role: StoreRoleOption;
  readonly #ownerWaitMs: number;
  readonly #durability: StoreDurability;
  readonly #methods = new Map<string, ServedMethod>();
  readonly #listeners = new Set<(change: RoleChange) => void>();
  #database: Database | undefined;
  #server: StoreServer | undefined;
  #connection: OwnerConnection | undefined;
  /** While the process looks for an owner (or becomes one): settles when it has. */
  #establishing: Promise<void> | undefined;
  /** Whether what this process serves is registered: an owner answers calls only then. */
  #serving = false;
  #closed = false;

  private constructor(options: Required<StoreSharingOptions>) {
    this.#path = options.path;
    this.#role = options.role;
    this.#ownerWaitMs = options.ownerWaitMs;
    this.#durability = options.durability;
  }

  /**
   * Owns the store or connects to its owner. Rejects with
   * DatabaseLockedError when `role` is `owner` and the lock is taken, or
   * when the lock's holder serves no socket within `ownerWaitMs` (it opened
   * the store with openDatabase, or runs an older version); with JobsError
   * `access_denied` or `protocol_mismatch` when the owner cannot be trusted
   * or understood.
   */
  static async open(options: StoreSharingOptions): Promise<StoreSharing> {
    const sharing = new StoreSharing({ role: 'auto', ownerWaitMs: 10_000, durability: 'flush', ...options });
    await sharing.#establish(performance.now() + sharing.#ownerWaitMs, true);
    return sharing;
  }

  get role(): StoreRole {
    return this.#database !== undefined ? 'owner' : 'client';
  }

  /** The database, in the owner. */
  get database(): Database | undefined {
    return this.#database;
  }

  /** The pid of the process that owns the store (this one's when it does). */
  get ownerPid(): number {
    return this.#database !== undefined ? process.pid : (this.#connection?.ownerPid ?? 0);
  }

  /** Processes connected to this one, while it owns the store. */
  get clients(): number {
    return this.#server?.connections ?? 0;
  }

  /** Serves `method` to the other processes whenever this process owns the store. */
  serve(name: string, method: ServedMethod): void {
    this.#methods.set(name, method);
  }

  /**
   * Opens the doors: call once everything served is registered. Until then
   * an owner holds the other processes' calls (they wait, they do not fail).
   */
  startServing(): void {
    this.#serving = true;
    this.#server?.openGate();
  }

  /** Told each time this process becomes the owner or connects to a new one. */
  onRoleChange(listener: (change: RoleChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * The connection to the owner while it is open, in a client; undefined
   * otherwise (an owner, a client between owners, closed). Calls go out on
   * it in their caller's turn, without the wait of `connection()`.
   */
  get openConnection(): OwnerConnection | undefined {
    const connection = this.#connection;
    return !this.#closed && this.#database === undefined && connection?.open === true ? connection : undefined;
  }

  /**
   * The connection to the owner, in a client: waits through a change of
   * owner for up to `ownerWaitMs`, then rejects with `owner_lost` (with
   * JobsError `closed` once closed). Resolves with undefined when this
   * process owns the store (it may have taken over meanwhile).
   */
  async connection(): Promise<OwnerConnection | undefined> {
    for (;;) {
      if (this.#closed) throw new JobsError('closed', 'the jobs handle is closed');
      if (this.#database !== undefined) return undefined;
      const connection = this.#connection;
      if (connection?.open) return connection;
      this.#establishing ??= this.#reestablish();
      await this.#establishing;
    }
  }

  /**
   * Stops serving the other processes: the first step of closing an owner.
   * Their calls in flight then reject with `owner_lost`, which they may
   * retry on the next owner, instead of getting what this process's closing
   * handles answer (`closed`, which is not theirs to get), and they look for
   * the next owner, which one of them becomes once `close` gives the store up.
   */
  async withdraw(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    await server?.close();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#connection?.close();
    // A takeover or a connection under way gives up what it gets now that
    // this is closed (see #own, #establish): once the close resolves, the
    // lock is free and no socket keeps the process alive.
    await this.#establishing?.catch(() => {});
    await this.#server?.close();
    this.#server = undefined;
    await this.#database?.close();
  }

  async #reestablish(): Promise<void> {
    try {
      await this.#establish(performance.now() + this.#ownerWaitMs, false);
    } finally {
      this.#establishing = undefined;
    }
  }

  /** Takes the lock or connects, trying again until `deadline` while the lock's holder does not serve yet. */
  async #establish(deadline: number, first: boolean): Promise<void> {
    let wait = RETRY_FIRST_MS;
    let lockedBy: DatabaseLockedError | undefined;
    /** The last connect that reached a socket whose owner never answered (stopped or hung). */
    let unanswered: ConnectRefused | undefined;
    for (;;) {
      if (this.#closed) throw new JobsError('closed', 'the jobs handle is closed');
      if (this.#role !== 'client') {
        try {
          await this.#own();
          return;
        } catch (error) {
          if (!(error instanceof DatabaseLockedError) || this.#role === 'owner') throw error;
          lockedBy = error;
        }
      }
      const socket = this.#socket();
      if (socket !== undefined) {
        try {
          checkPrivate(socket);
          const connection = await OwnerConnection.open(socket.path, Math.max(MIN_WELCOME_WAIT_MS, deadline - performance.now()));
          if (this.#closed) {
            connection.close();
            throw new JobsError('closed', 'the jobs handle is closed');
          }
          this.#connected(connection);
          return;
        } catch (error) {
          if (!(error instanceof ConnectRefused)) throw error;
          unanswered = error.errno === 'ETIMEDOUT' ? error : undefined;
        }
      }
      if (performance.now() >= deadline) {
        if (unanswered !== undefined) {
          const detail = `and does not answer on the store's socket (stopped or hung?): ${unanswered.message}`;
          if (first && lockedBy !== undefined) throw new DatabaseLockedError(lockedBy.path, lockedBy.ownerPid, detail);
          throw new JobsError('owner_lost', `the process that owns the store in ${this.#path} ${detail}`);
        }
        if (first && lockedBy !== undefined) {
          throw new DatabaseLockedError(
            lockedBy.path,
            lockedBy.ownerPid,
            'and serves no other processes (it opened the store with openDatabase, or runs a jobtree version without sharing)',
          );
        }
        throw new JobsError('owner_lost', `no process serves the store in ${this.#path} (waited ${this.#ownerWaitMs} ms for one)`);
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, RETRY_MAX_MS);
    }
  }

  async #own(): Promise<void> {
    const database = await openDatabase({ path: this.#path, durability: this.#durability });
    try {
      const socket = this.#socket();
      if (socket === undefined) throw new JobsError('access_denied', `the data directory ${this.#path} cannot be resolved`);
      const server = await StoreServer.listen(socket, this.#methods);
      // Closed while the store opened (a takeover as the process closes): the store is given up at once.
      if (this.#closed) {
        await server.close();
        throw new JobsError('closed', 'the jobs handle is closed');
      }
      this.#server = server;
      if (this.#serving) this.#server.openGate();
    } catch (error) {
      await database.close();
      throw error;
    }
    this.#database = database;
    this.#connection = undefined;
    for (const listener of this.#listeners) listener({ role: 'owner', database });
  }

  #connected(connection: OwnerConnection): void {
    this.#connection = connection;
    void connection.lost.then(() => {
      if (this.#closed || this.#connection !== connection) return;
      // Look for the next owner at once: subscriptions and waits carry on sooner.
      this.#establishing ??= this.#reestablish();
      this.#establishing.catch(() => {});
    });
    for (const listener of this.#listeners) listener({ role: 'client', ownerPid: connection.ownerPid });
  }

  /** The store's socket, or undefined while the data directory does not exist yet. */
  #socket(): ReturnType<typeof storeSocket> | undefined {
    try {
      return storeSocket(this.#path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }
}
