// The handler threads: a piscina pool whose every thread runs one lane (a
// long task running many handlers, of any job type, see lane-worker.ts).
// An app has one, shared by the processors of every type (each has a share
// of it, see handler-pool.ts): threads are a cost of the machine, not of
// the number of types. The lanes start with the pool and load a handler
// module as soon as a processor of it joins, and `app.process` waits for
// every lane to have it: a first job finds its thread up and its module
// loaded, and does not share the CPU with the other threads' imports.
//
// A batch of one processor's jobs goes in one message per lane: whole to
// the least busy lane when the lanes run through it quickly, else spread
// job by job over the least busy lanes (see ONE_LANE_BATCH_MS). A lane
// whose thread dies, or that stops ticking for the `stuckThreadMs` of a
// processor it runs, is gone with its thread; every run on it is reported
// lost to its own processor with the culprit named (the run the thread was
// executing, or the one it was ended for, whatever its type), and a new
// lane starts in its place. piscina starts no thread of its own once one
// exited before it was ready (its guard against threads that cannot
// start): a lane left waiting for a thread then is ended like a dead one,
// and the lanes after it start their threads after a wait that doubles
// while threads keep exiting before they run a job (see #checkStarved and
// #ended). Runs quick enough also go to a lane ahead of its free slots,
// queued there (see lane-queue.ts): those a dead lane never started go back
// to their processor unstarted.
//
// One file over 500 lines: the lanes, the runs placed on them, the modules
// each has loaded and the watchdog are one piece of state that every
// method reads and changes (a death must see every run and every share);
// split, each part would reach into the others. Each method is short.

import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import { EventEmitter } from 'eventemitter3';
import { THREAD_ENTRY, execArgvWithoutTsx, threadEntry, workerTakesExecArgv } from '@jobtree/actors';
import { Piscina } from 'piscina';
import { SchedulerError } from './errors.js';
import type { HandlerPoolEvents, ThreadsRestarting } from './handler-runner.js';
import type { AbortCause } from './interfaces.js';
import {
  type FromLane,
  type PackedResults,
  type LaneRun,
  type LaneTask,
  type PackedRuns,
  RESULT_FIELDS,
  SPELL_FIELDS,
  type SerializedError,
  type ToLane,
  packRun,
} from './lane-protocol.js';
import { aheadPerLane, unreportedStarts } from './lane-queue.js';
import { CURRENT, NO_JOB, TICK, createLaneStatus } from './lane-status.js';

/**
 * A batch that one lane runs through within this long (by the processor's
 * measured time per run) goes to that lane whole. Every message to a lane
 * whose thread sleeps costs the main thread a wake-up of that thread, more
 * than a second thread would save on so little work.
 * Longer batches, and every batch until a lane has first run dry, are spread
 * job by job over the least busy lanes.
 */
export const ONE_LANE_BATCH_MS = 5;

/**
 * Queued runs go to a lane in a message of their own (with none of the
 * processor's runs to start there in the same turn) only while the runs it
 * has started of the processor hold it at least this long, by the
 * processor's measured time per run, and only when those runs wait for
 * something outside the thread (a processor whose busy spells end in the
 * turn they begin in has ended every run a lane started before the lane
 * reads its next message). Runs quicker than that have most likely all
 * ended by the time the message arrives (a sleeping thread's wake-up alone
 * takes a few tenths of a millisecond), and the lane returns queued runs
 * that have no run of theirs to follow: every one of them would come back
 * unstarted, to wait for a free slot, and hold up the runs queued ahead
 * after it (see runs-ahead.ts). They wait in the local queue instead, and
 * go with the processor's next runs on the lane.
 */
const QUEUED_ALONE_MS = 1;

/** One processor's part of the handler threads: what it runs, and what the threads learn about its runs. */
export interface Share {
  readonly id: number;
  readonly handlerUrl: string;
  readonly jobType: string;
  /** The most lanes its runs spread over. */
  readonly maxLanes: number;
  readonly stuckThreadMs: number;
  readonly oneLaneBatchMs: number;
  readonly events: HandlerPoolEvents;
  /** The live lanes its runs went to (at most maxLanes). */
  readonly lanes: Set<Lane>;
  /** How long a run keeps a lane busy (ms, averaged over its busy spells); unknown until a lane first runs dry of it. */
  runMs: number;
  /** Its runs on lanes now. */
  runs: number;
  /** Whether its last busy spell on a lane ended in the turn it began in (its runs wait for nothing outside the thread). */
  endsInTurn: boolean;
  /** Called when its last run on the lanes ends (while it leaves). */
  emptied: (() => void) | undefined;
}

export type ShareOptions = Pick<Share, 'handlerUrl' | 'jobType' | 'maxLanes' | 'stuckThreadMs' | 'oneLaneBatchMs' | 'events'>;

export interface Lane {
  readonly port: MessagePort;
  readonly status: Int32Array;
  readonly controller: AbortController;
  /** Runs sent and not ended, of every processor (queued ones included). */
  jobs: number;
  /** Runs queued on it, not started (see lane-queue.ts). */
  queued: number;
  /** Its started runs, by processor (share id): queued runs of a processor start as these end. */
  readonly startedOf: Map<number, number>;
  /** Starts of queued runs the main thread has heard of (the lane's STARTS word counts them all). */
  reportedStarts: number;
  threadId: number | undefined;
  /** Handler modules the lane was asked to load, by URL: true once loaded. */
  readonly modules: Map<string, boolean>;
  /** Modules it is loading now: a thread busy importing is not stuck. */
  loading: number;
  /** The processors whose runs it got (their stuckThreadMs watch it). */
  readonly shares: Set<Share>;
  ready: boolean;
  lastTick: number;
  lastTickAt: number;
  /** The start failures in a row when it was made (its thread's start waited for them). */
  readonly failuresBefore: number;
  /** Whether its thread has ended a run or started a queued one: a thread that dies before it has, soon after it came up, is counted with those that could not start. */
  ranJob: boolean;
  /** When it first came up (see #cameUp). */
  upAt: number | undefined;
  /** Why the main thread ended it, when it did. */
  killReason: string | undefined;
  /** The run the main thread ended it for, when it was one job's fault. */
  killedFor: number | undefined;
  dead: boolean;
}

/** Where a run is: its lane, its processor, its job. */
interface Placed {
  readonly lane: Lane;
  readonly share: Share;
  readonly id: string;
  /** Queued on its lane, not started. */
  queued: boolean;
  /** Asked back from its lane while queued (see recall). */
  recalled: boolean;
}

/** A handler module being loaded for a processor about to start. */
interface ModuleLoad {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
  settled: boolean;
  /** Threads that exited before they had loaded the module, while no thread had it. */
  threadsLost: number;
}

/** The longest `close` waits for threads busy starting or importing a handler module in synchronous code. */
const CLOSE_AFTER_LOADS_MS = 10_000;
const LOADING_POLL_MS = 5;

/** The wait before a lane's thread starts after one thread exited before it ran a job; it doubles with each such exit in a row. */
const RESTART_FIRST_MS = 100;
/** The longest such wait: a thread that cannot start costs a thread start this often at most. */
const RESTART_MOST_MS = 5_000;
/**
 * Threads that may exit before they have loaded a module no thread has yet
 * before its load fails: one exit may be a fault from outside, a few in a
 * row are the module's (a top level that ends its thread).
 */
const LOAD_THREADS_LOST = 3;
/** Why a lane that piscina left without a thread ends (the reason of its runs' loss). */
const STARTING_THREAD_EXITED = 'a handler thread exited while it started';

/** Each handler thread runs the lane (see lane-worker.ts). */
const LANE_ENTRY = threadEntry(import.meta.url, './lane-worker');
/** From TypeScript sources the lane itself needs tsx; built, it does not. */
const LANE_IS_TYPESCRIPT = import.meta.url.endsWith('.ts');

/**
 * The app's flags without tsx, when a Worker takes them: flags given
 * explicitly must all be valid in a Worker (`--expose-gc` is not, for one),
 * where inherited ones are filtered by Node. Checked once, on a Worker that
 * is ended at once; when they are not valid, the threads inherit the flags
 * as they are (tsx then in their execArgv, as before).
 */
let checkedExecArgv: { argv: string[] | undefined } | undefined;
function workerExecArgvWithoutTsx(): string[] | undefined {
  if (checkedExecArgv !== undefined) return checkedExecArgv.argv;
  const argv = execArgvWithoutTsx(process.execArgv);
  checkedExecArgv = { argv: argv !== undefined && workerTakesExecArgv(argv) ? argv : undefined };
  return checkedExecArgv.argv;
}

function tsxApiOrUndefined(): string | undefined {
  try {
    return import.meta.resolve('tsx/esm/api');
  } catch {
    return undefined;
  }
}

/** The events of the handler threads themselves, once each whatever the processors sharing them. */
export interface HandlerThreadsEventTypes {
  /** A handler thread exited before it ran a job: the next one starts after `delayMs`. */
  'threads:restarting': [event: ThreadsRestarting];
}

export class HandlerThreads {
  /** How many threads (and lanes) the pool keeps. */
  readonly size: number;
  readonly events = new EventEmitter<HandlerThreadsEventTypes>();
  readonly #pool: Piscina<LaneTask, void>;
  /** tsx's API for a lane that meets a TypeScript handler, when the lane code itself is built JavaScript. */
  readonly #tsxApi: string | undefined;
  readonly #lanes = new Set<Lane>();
  readonly #placed = new Map<number, Placed>();
  readonly #shares = new Map<number, Share>();
  readonly #loads = new Map<string, ModuleLoad>();
  /** Runs (and queued runs) for busy lanes, sent at the end of the turn, one message per lane and processor (see #sendRuns). */
  readonly #outbox = new Map<Lane, Map<Share, { runs: PackedRuns; ahead: PackedRuns | undefined }>>();
  #outboxQueued = false;
  /** Lanes whose last run ended in this turn of the event loop. */
  readonly #ranDry = new Set<Lane>();
  #nextShare = 1;
  #watchdog: NodeJS.Timeout | undefined;
  #watchEvery = Number.POSITIVE_INFINITY;
  #closed = false;
  /** Threads that exited before they ran a job, in a row (none since a lane last came up, see #cameUp and #ended). */
  #startFailures = 0;
  /** Lanes whose thread waits for the restart delay, with their timers. */
  readonly #delayed = new Map<Lane, NodeJS.Timeout>();
  #starvedCheckQueued = false;

  constructor(options: { threads: number }) {
    this.size = options.threads;
    // Built, a JavaScript handler's thread starts with no TypeScript loader
    // (tsx in the app's own flags is left to its main thread); the lane
    // registers tsx itself for a TypeScript handler, when the app has it.
    const withoutTsx = LANE_IS_TYPESCRIPT ? undefined : workerExecArgvWithoutTsx();
    this.#tsxApi = LANE_IS_TYPESCRIPT ? undefined : tsxApiOrUndefined();
    this.#pool = new Piscina<LaneTask, void>({
      filename: THREAD_ENTRY.href,
      minThreads: options.threads,
      maxThreads: options.threads,
      // One lane per thread: a lane's thread is what a stuck handler costs.
      concurrentTasksPerWorker: 1,
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: { entry: LANE_IS_TYPESCRIPT ? LANE_ENTRY : { ...LANE_ENTRY, tsxApi: undefined } },
      ...(withoutTsx === undefined ? {} : { execArgv: withoutTsx }),
    });
    // By the next turn a lost thread has its replacement, when piscina
    // starts one, and its lane has its own: the check looks then.
    this.#pool.on('workerDestroy', () => {
      if (this.#starvedCheckQueued) return;
      this.#starvedCheckQueued = true;
      setImmediate(this.#checkStarved);
    });
    for (let i = 0; i < options.threads; i++) this.#newLane();
  }

  /** The pool's worker threads (for monitoring and fault injection). */
  get threads(): readonly Worker[] {
    return this.#pool.threads;
  }

  /**
   * Loads a handler module in every lane; resolves once every live lane
   * has it, rejects with SchedulerError `invalid_handler` when it does not
   * load.
   */
  load(url: string): Promise<void> {
    if (this.#closed) return Promise.reject(new SchedulerError('stopped', 'the handler threads are closed'));
    let load = this.#loads.get(url);
    if (load === undefined || (load.settled && this.#loadedNowhere(url))) {
      let resolve!: () => void;
      let reject!: (error: Error) => void;
      const promise = new Promise<void>((yes, no) => {
        resolve = yes;
        reject = no;
      });
      load = { promise, resolve, reject, settled: false, threadsLost: 0 };
      this.#loads.set(url, load);
    }
    for (const lane of this.#lanes) this.#ask(lane, url);
    this.#settleLoad(url);
    return load.promise;
  }

  /** A load resolves once every live lane has the module (a lane that died meanwhile is replaced, and its successor loads it). */
  #settleLoad(url: string): void {
    const load = this.#loads.get(url);
    if (load === undefined || load.settled) return;
    let live = 0;
    for (const lane of this.#lanes) {
      if (lane.dead || lane.killReason !== undefined) continue;
      if (lane.modules.get(url) !== true) return;
      live++;
    }
    if (live === 0) return;
    load.settled = true;
    load.resolve();
  }

  /** A processor joins: its module starts loading in every lane. */
  join(options: ShareOptions): Share {
    const share: Share = { ...options, id: this.#nextShare++, lanes: new Set(), runMs: Number.POSITIVE_INFINITY, runs: 0, endsInTurn: false, emptied: undefined };
    this.#shares.set(share.id, share);
    this.load(share.handlerUrl).catch(() => {
      // A module that does not load fails each run sent to it, with its error.
    });
    this.#watch();
    return share;
  }

  /**
   * A processor leaves: a run of it still going ignored its abort signal
   * through the grace period, so its lane is ended (the other runs there,
   * of any processor, are its bystanders). Resolves when none of its runs
   * is left on the lanes.
   */
  async leave(share: Share, reason: string): Promise<void> {
    for (const [serial, placed] of this.#placed) {
      if (placed.share !== share || placed.lane.killReason !== undefined) continue;
      if (!placed.queued) placed.lane.killedFor = serial;
      this.#kill(placed.lane, reason);
    }
    if (share.runs > 0) await new Promise<void>((resolve) => (share.emptied = resolve));
    this.#shares.delete(share.id);
    for (const lane of this.#lanes) lane.shares.delete(share);
    this.#watch();
  }

  /** The thread id running a run, once its handler has started (its module loaded there). */
  threadIdOf(serial: number): number | undefined {
    return this.isStarted(serial) ? this.#placed.get(serial)?.lane.threadId : undefined;
  }

  /** Whether a run's lane has loaded its handler module (so its handler has been called or is about to be). */
  isStarted(serial: number): boolean {
    const placed = this.#placed.get(serial);
    return placed !== undefined && !placed.queued && placed.lane.modules.get(placed.share.handlerUrl) === true;
  }

  /**
   * Sends runs to lanes, one message per lane: a batch short enough to the
   * least busy lane whole (see ONE_LANE_BATCH_MS), any other each run to the
   * least busy lane.
   */
  start(share: Share, runs: readonly LaneRun[]): void {
    if (runs.length === 0) return;
    if (runs.length * share.runMs <= share.oneLaneBatchMs) {
      const lane = this.#pickLane(share);
      const idle = this.#isIdle(lane, share);
      const packed: PackedRuns = [];
      for (const run of runs) {
        this.#place(run, lane, share);
        packRun(packed, run);
      }
      this.#sendRuns(lane, share, packed, idle);
      return;
    }
    const batches = new Map<Lane, { runs: PackedRuns; idle: boolean }>();
    for (const run of runs) {
      const lane = this.#pickLane(share);
      let batch = batches.get(lane);
      if (batch === undefined) {
        batch = { runs: [], idle: this.#isIdle(lane, share) };
        batches.set(lane, batch);
      }
      this.#place(run, lane, share);
      packRun(batch.runs, run);
    }
    for (const [lane, batch] of batches) this.#sendRuns(lane, share, batch.runs, batch.idle);
  }

  /**
   * A lane with no run since an earlier turn, and nothing on its way to it,
   * for a processor with no run on any lane: the thread sleeps, and a start
   * for it has nothing to join. A lane whose runs ended in this turn is not
   * idle (the slots its results freed fill in this turn, and their runs go
   * together at its end), nor is one of a processor busy elsewhere (more of
   * its runs are likely to follow in this turn).
   */
  #isIdle(lane: Lane, share: Share): boolean {
    return share.runs === 0 && lane.jobs === 0 && !this.#ranDry.has(lane) && !this.#outbox.has(lane);
  }

  /**
   * How many more runs of the processor its lanes would queue now: on each
   * of its lanes that takes them (see #takesAhead), what runs in
   * ONE_LANE_BATCH_MS at its measured pace, less what is queued there (none
   * before a lane has first run dry of it).
   */
  aheadRoom(share: Share): number {
    const perLane = aheadPerLane(share.runMs, share.oneLaneBatchMs);
    if (perLane === 0) return 0;
    let room = 0;
    for (const lane of share.lanes) if (this.#takesAhead(lane, share)) room += Math.max(0, perLane - lane.queued);
    return room;
  }

  /** Queues runs on the processor's lanes (see aheadRoom), the least queued lane first. */
  runAhead(share: Share, runs: readonly LaneRun[]): void {
    const perLane = aheadPerLane(share.runMs, share.oneLaneBatchMs);
    for (const run of runs) {
      let best: Lane | undefined;
      for (const lane of share.lanes) {
        if (this.#takesAhead(lane, share) && lane.queued < perLane && (best === undefined || lane.queued < best.queued)) best = lane;
      }
      // No room after all: the run goes as any other (a lane with none of the processor's runs would return it).
      best ??= this.#pickLane(share);
      this.#place(run, best, share, true);
      packRun(this.#boxFor(best, share, true), run);
    }
  }

  /** Asks the lanes for the processor's queued runs back (each once); those not started by then are returned. */
  recall(share: Share): void {
    const byLane = new Map<Lane, number[]>();
    for (const [serial, placed] of this.#placed) {
      if (placed.share !== share || !placed.queued || placed.recalled) continue;
      placed.recalled = true;
      const list = byLane.get(placed.lane);
      if (list === undefined) byLane.set(placed.lane, [serial]);
      else list.push(serial);
    }
    if (byLane.size === 0) return;
    this.#flushOutbox();
    for (const [lane, serials] of byLane) send(lane, { kind: 'recall', serials });
  }

  /**
   * Whether queued runs of the processor may go to the lane now: it runs
   * some of the processor's runs and has its module, and either gets more
   * of them in this turn's message or is busy with them for a while, waiting
   * on something (see QUEUED_ALONE_MS).
   */
  #takesAhead(lane: Lane, share: Share): boolean {
    const started = lane.startedOf.get(share.id) ?? 0;
    if (lane.dead || lane.killReason !== undefined || started === 0 || lane.modules.get(share.handlerUrl) !== true) return false;
    return (!share.endsInTurn && started * share.runMs >= QUEUED_ALONE_MS) || (this.#outbox.get(lane)?.get(share)?.runs.length ?? 0) > 0;
  }

  /** Aborts the signals of running handlers; queued runs are dropped unstarted. */
  abort(serials: readonly number[], cause: AbortCause): void {
    const byLane = new Map<Lane, number[]>();
    for (const serial of serials) {
      const lane = this.#placed.get(serial)?.lane;
      if (lane === undefined) continue;
      const list = byLane.get(lane);
      if (list === undefined) byLane.set(lane, [serial]);
      else list.push(serial);
    }
    // The runs go before their abort.
    this.#flushOutbox();
    for (const [lane, list] of byLane) send(lane, { kind: 'abort', serials: list, cause });
  }

  /** Terminates the thread running a run, that run's fault (its other runs are reported lost as bystanders). */
  killThreadOf(serial: number, reason: string): void {
    const lane = this.#placed.get(serial)?.lane;
    if (lane === undefined || lane.dead || lane.killReason !== undefined) return;
    lane.killedFor = serial;
    this.#kill(lane, reason);
  }

  /** Terminates every thread at once; running jobs are reported lost. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
    for (const [lane, timer] of this.#delayed) {
      clearTimeout(timer);
      this.#ended(lane, 'the handler threads closed');
    }
    this.#delayed.clear();
    for (const load of this.#loads.values()) if (!load.settled) load.reject(new SchedulerError('stopped', 'the handler threads closed'));
    this.#flushOutbox();
    // A lane that reads the close while it imports a module ends its thread
    // itself, from the message (see lane-worker.ts): a thread terminated from
    // here while it imports a native addon (lmdb, say, under a handler
    // module's imports) can abort the whole process ("napi_throw" in the
    // addon's registration), and one at a message is in no import's code.
    for (const lane of this.#lanes) {
      lane.killReason ??= 'the handler threads closed';
      send(lane, { kind: 'close' });
    }
    // Threads still starting, or busy importing in synchronous code, read it
    // once done, for a bounded time; one stuck in a handler's code never does.
    const until = performance.now() + CLOSE_AFTER_LOADS_MS;
    while (this.#anyLaneImporting() && performance.now() < until) await sleep(LOADING_POLL_MS);
    await this.#pool.destroy();
  }

  /** Whether a lane's thread is starting, or loading a module with no job's code running there. */
  #anyLaneImporting(): boolean {
    for (const lane of this.#lanes) {
      if (lane.dead || (lane.ready && lane.loading === 0)) continue;
      if (Atomics.load(lane.status, CURRENT) === NO_JOB) return true;
    }
    return false;
  }

  #place(run: LaneRun, lane: Lane, share: Share, queued = false): void {
    lane.jobs++;
    share.runs++;
    if (queued) lane.queued++;
    else lane.startedOf.set(share.id, (lane.startedOf.get(share.id) ?? 0) + 1);
    this.#placed.set(run.serial, { lane, share, id: run.job.id, queued, recalled: false });
  }

  /**
   * Runs for an idle lane go at once: its thread sleeps, and its wake-up is
   * most of a start's way there, so it begins before the rest of the turn
   * runs. Runs for a busy lane wait for the end of the turn, one message for
   * all of them.
   */
  #sendRuns(lane: Lane, share: Share, runs: PackedRuns, idle: boolean): void {
    if (!idle) {
      this.#boxFor(lane, share, false).push(...runs);
      return;
    }
    this.#ask(lane, share.handlerUrl);
    lane.shares.add(share);
    send(lane, { kind: 'start', url: share.handlerUrl, type: share.jobType, share: share.id, runs });
  }

  /** The runs (or the queued runs) going to `lane` for `share` at the end of the turn. */
  #boxFor(lane: Lane, share: Share, ahead: boolean): PackedRuns {
    this.#ask(lane, share.handlerUrl);
    lane.shares.add(share);
    let byShare = this.#outbox.get(lane);
    if (byShare === undefined) {
      byShare = new Map();
      this.#outbox.set(lane, byShare);
    }
    let box = byShare.get(share);
    if (box === undefined) {
      box = { runs: [], ahead: undefined };
      byShare.set(share, box);
    }
    if (!this.#outboxQueued) {
      this.#outboxQueued = true;
      queueMicrotask(this.#flushOutbox);
    }
    if (!ahead) return box.runs;
    box.ahead ??= [];
    return box.ahead;
  }

  readonly #flushOutbox = (): void => {
    this.#outboxQueued = false;
    if (this.#outbox.size === 0) return;
    for (const [lane, byShare] of this.#outbox) {
      for (const [share, { runs, ahead }] of byShare) {
        const message: Extract<ToLane, { kind: 'start' }> = { kind: 'start', url: share.handlerUrl, type: share.jobType, share: share.id, runs };
        if (ahead !== undefined) message.ahead = ahead;
        send(lane, message);
      }
    }
    this.#outbox.clear();
  };

  #ask(lane: Lane, url: string): void {
    if (lane.modules.has(url) || lane.dead) return;
    lane.modules.set(url, false);
    lane.loading++;
    send(lane, { kind: 'load', url });
  }

  #loadedNowhere(url: string): boolean {
    for (const lane of this.#lanes) if (lane.modules.get(url) === true) return false;
    return true;
  }

  /**
   * The least busy of the processor's lanes; another, less busy lane of the
   * pool while it has fewer than its maxLanes and all of its are busy.
   */
  #pickLane(share: Share): Lane {
    let best: Lane | undefined;
    for (const lane of share.lanes) {
      if (lane.dead || lane.killReason !== undefined) {
        share.lanes.delete(lane);
        continue;
      }
      if (best === undefined || lane.jobs < best.jobs) best = lane;
    }
    if (best === undefined || (best.jobs > 0 && share.lanes.size < share.maxLanes)) {
      let other: Lane | undefined;
      for (const lane of this.#lanes) {
        if (lane.dead || lane.killReason !== undefined || share.lanes.has(lane)) continue;
        if (other === undefined || lane.jobs < other.jobs) other = lane;
      }
      // No lane alive at all (the last one is being ended): a new one, which piscina starts once a thread is free.
      other ??= best === undefined ? this.#newLane() : undefined;
      if (other !== undefined && (best === undefined || other.jobs < best.jobs)) {
        share.lanes.add(other);
        return other;
      }
    }
    return best as Lane;
  }

  #liveLanes(): number {
    let count = 0;
    for (const lane of this.#lanes) if (!lane.dead && lane.killReason === undefined) count++;
    return count;
  }

  #newLane(): Lane {
    const channel = new MessageChannel();
    const { buffer, view } = createLaneStatus();
    const lane: Lane = {
      port: channel.port1,
      status: view,
      controller: new AbortController(),
      jobs: 0,
      queued: 0,
      startedOf: new Map(),
      reportedStarts: 0,
      threadId: undefined,
      modules: new Map(),
      loading: 0,
      shares: new Set(),
      ready: false,
      lastTick: 0,
      lastTickAt: performance.now(),
      failuresBefore: this.#startFailures,
      ranJob: false,
      upAt: undefined,
      killReason: undefined,
      killedFor: undefined,
      dead: false,
    };
    this.#lanes.add(lane);
    lane.port.on('message', (message: FromLane) => this.#receive(lane, message));
    const task: LaneTask = { port: channel.port2, status: buffer, tsxApi: this.#tsxApi };
    // Runs placed on a lane whose thread waits wait in its port.
    if (this.#startFailures === 0) this.#runLane(lane, task);
    else {
      const timer = setTimeout(() => {
        this.#delayed.delete(lane);
        this.#runLane(lane, task);
      }, this.#restartDelayMs());
      this.#delayed.set(lane, timer);
    }
    // Every module the processors run, loaded ahead of their jobs, and those a processor about to start waits for.
    for (const share of this.#shares.values()) this.#ask(lane, share.handlerUrl);
    for (const [url, load] of this.#loads) if (!load.settled) this.#ask(lane, url);
    return lane;
  }

  #runLane(lane: Lane, task: LaneTask): void {
    this.#pool
      .run(task, { transferList: [task.port], signal: lane.controller.signal })
      .then(
        () => this.#ended(lane, 'the handler thread ended its lane'),
        (error: unknown) => this.#ended(lane, error instanceof Error ? error.message : String(error)),
      );
  }

  #restartDelayMs(): number {
    return Math.min(RESTART_MOST_MS, RESTART_FIRST_MS * 2 ** Math.min(30, this.#startFailures - 1));
  }

  /**
   * After a thread is gone: lane tasks waiting in piscina's queue with no
   * thread starting for them wait for one that piscina will not start (one
   * of its threads exited before it was ready). Those lanes end as if their
   * threads had died, and the lanes that replace them start threads of
   * their own (piscina starts one for a task while it has fewer than its
   * maximum) after the restart delay.
   */
  readonly #checkStarved = (): void => {
    this.#starvedCheckQueued = false;
    const waiting = this.#pool.queueSize;
    if (this.#closed || waiting === 0) return;
    // piscina gives threads to the tasks in the order they came: the lanes
    // without one are the last sent of those not started.
    const starved: Lane[] = [];
    for (const lane of this.#lanes) if (!lane.ready && !lane.dead && lane.killReason === undefined && !this.#delayed.has(lane)) starved.push(lane);
    this.#failedToStart(STARTING_THREAD_EXITED);
    for (const lane of starved.slice(-waiting)) this.#kill(lane, STARTING_THREAD_EXITED);
  };

  /** A thread exited before it ran a job: the next lanes' threads wait, and every processor hears why. */
  #failedToStart(reason: string): void {
    this.#startFailures++;
    const event = { reason, failures: this.#startFailures, delayMs: this.#restartDelayMs() };
    this.events.emit('threads:restarting', event);
    for (const share of this.#shares.values()) share.events.threadsRestarting(event);
  }

  /**
   * A lane is up and has answered every module it was asked for (loaded, or
   * broken: a module that does not load is the module's fault, not the
   * thread's): threads start again, and a later loss starts no series of
   * its own unless that lane's thread dies before it ran a job (see #ended).
   */
  #cameUp(lane: Lane): void {
    if (!lane.ready || lane.loading > 0) return;
    this.#startFailures = 0;
    lane.upAt ??= performance.now();
  }

  #receive(lane: Lane, message: FromLane): void {
    switch (message.kind) {
      case 'ready':
        lane.ready = true;
        lane.threadId = message.threadId;
        lane.lastTickAt = performance.now();
        this.#cameUp(lane);
        break;
      case 'loaded': {
        lane.modules.set(message.url, true);
        lane.loading--;
        this.#cameUp(lane);
        this.#settleLoad(message.url);
        break;
      }
      case 'broken':
        // The lane answers the module's runs with the error itself; asked again, it tries again.
        lane.modules.delete(message.url);
        lane.loading--;
        this.#cameUp(lane);
        this.#broken(message.url, message.error);
        break;
      case 'settled': {
        const { results, spells, started, returned } = message;
        if (results.length > 0 || started !== undefined) lane.ranJob = true;
        if (spells !== undefined) {
          for (let i = 0; i < spells.length; i += SPELL_FIELDS) {
            const share = this.#shares.get(spells[i] as number);
            const runs = spells[i + 2] as number;
            if (share === undefined || runs === 0) continue;
            const perRun = (spells[i + 1] as number) / runs;
            share.runMs = Number.isFinite(share.runMs) ? (3 * share.runMs + perRun) / 4 : perRun;
            share.endsInTurn = spells[i + 3] === 1;
          }
        }
        if (started === undefined) {
          for (let i = 0; i < results.length; i += RESULT_FIELDS) this.#settled(lane, results, i);
        } else {
          // A queued run started when one of its processor's runs ended, and
          // before its own result: the runs that ended go first, then each
          // start with its own result if it came too, so that the processor
          // never counts more runs going than the lane ran at once.
          const startedHere = new Set(started);
          const resultOfStarted = new Map<number, number>();
          for (let i = 0; i < results.length; i += RESULT_FIELDS) {
            const serial = results[i] as number;
            if (startedHere.has(serial)) resultOfStarted.set(serial, i);
            else this.#settled(lane, results, i);
          }
          for (const serial of started) {
            this.#started(lane, serial);
            const i = resultOfStarted.get(serial);
            if (i !== undefined) this.#settled(lane, results, i);
          }
        }
        if (returned !== undefined) for (const serial of returned) this.#returned(lane, serial);
        break;
      }
      case 'update': {
        const placed = this.#placed.get(message.serial);
        if (placed?.lane !== lane) {
          send(lane, { kind: 'updated', request: message.request, error: { name: 'SchedulerError', code: 'halt', message: 'the job has ended' } });
          break;
        }
        placed.share.events.update(message.serial, message.data as JsonValue, (error) =>
          send(lane, error === undefined ? { kind: 'updated', request: message.request } : { kind: 'updated', request: message.request, error }),
        );
        break;
      }
      case 'readChildren': {
        const placed = this.#placed.get(message.serial);
        if (placed?.lane !== lane) {
          send(lane, { kind: 'children', request: message.request, error: { name: 'SchedulerError', code: 'halt', message: 'the job has ended' } });
          break;
        }
        placed.share.events.childResults(message.serial, (children, error) =>
          send(lane, error === undefined ? { kind: 'children', request: message.request, children } : { kind: 'children', request: message.request, error }),
        );
        break;
      }
    }
  }

  /** A thread exited before it had loaded `url`: the load fails once that happened LOAD_THREADS_LOST times while no thread had the module. */
  #lostWhileLoading(url: string, error: string): void {
    const load = this.#loads.get(url);
    if (load === undefined || load.settled || !this.#loadedNowhere(url)) return;
    load.threadsLost++;
    if (load.threadsLost < LOAD_THREADS_LOST) return;
    load.settled = true;
    load.reject(new SchedulerError('invalid_handler', `the handler module ${url} did not load: ${load.threadsLost} handler threads in a row exited before it loaded it (the last: ${error})`));
  }

  /** A module did not load: a processor waiting for it to start hears why. */
  #broken(url: string, error: SerializedError): void {
    const load = this.#loads.get(url);
    if (load === undefined || load.settled) return;
    load.settled = true;
    load.reject(new SchedulerError('invalid_handler', `the handler module ${url} did not load: ${error.message}`));
  }

  #unplace(serial: number, placed: Placed): void {
    this.#placed.delete(serial);
    const { lane, share } = placed;
    lane.jobs--;
    share.runs--;
    if (placed.queued) lane.queued--;
    else lane.startedOf.set(share.id, (lane.startedOf.get(share.id) as number) - 1);
    if (lane.jobs === 0) {
      if (this.#ranDry.size === 0) setImmediate(this.#newTurn);
      this.#ranDry.add(lane);
    }
  }

  readonly #newTurn = (): void => {
    this.#ranDry.clear();
  };

  /** The run of a lane's result at `i` of `results` ended. */
  #settled(lane: Lane, results: PackedResults, i: number): void {
    const serial = results[i] as number;
    const placed = this.#placed.get(serial);
    if (placed?.lane !== lane) return;
    this.#unplace(serial, placed);
    placed.share.events.settled(serial, results[i + 1] === true, results[i + 2]);
    if (placed.share.runs === 0) placed.share.emptied?.();
  }

  /** A queued run the lane started. */
  #started(lane: Lane, serial: number): void {
    lane.reportedStarts = (lane.reportedStarts + 1) | 0;
    const placed = this.#placed.get(serial);
    if (placed?.lane !== lane || !placed.queued) return;
    placed.queued = false;
    lane.queued--;
    lane.startedOf.set(placed.share.id, (lane.startedOf.get(placed.share.id) ?? 0) + 1);
    placed.share.events.started(serial);
  }

  /** A queued run the lane dropped unstarted goes back to its processor. */
  #returned(lane: Lane, serial: number): void {
    const placed = this.#placed.get(serial);
    if (placed?.lane !== lane || !placed.queued) return;
    this.#unplace(serial, placed);
    placed.share.events.returned(serial);
    if (placed.share.runs === 0) placed.share.emptied?.();
  }

  #kill(lane: Lane, reason: string): void {
    if (lane.dead || lane.killReason !== undefined) return;
    lane.killReason = reason;
    lane.controller.abort(reason);
    // A lane whose thread waits for the restart delay has no task in piscina to reject yet.
    if (this.#delayed.has(lane)) queueMicrotask(() => this.#ended(lane, reason));
  }

  #ended(lane: Lane, error: string): void {
    if (lane.dead) return;
    lane.dead = true;
    this.#lanes.delete(lane);
    lane.port.close();
    clearTimeout(this.#delayed.get(lane));
    this.#delayed.delete(lane);
    const executing = Atomics.load(lane.status, CURRENT);
    const culprit = lane.killedFor ?? (executing === NO_JOB ? undefined : executing);
    // A thread that exits before its lane starts, or before it has loaded
    // its modules, may be unable to start at all: the next one waits
    // (piscina, for its part, stops starting threads after an exit before
    // its own start, see #checkStarved). So does one that exits, of itself,
    // before it ran a job: a module's top level can end the thread from a
    // timer after it loaded, and every replacement would load it and die
    // again as fast as threads start (with runs going there too: the
    // module's timer is in no job's code). Such a thread carries on the
    // series its own start waited for, though another lane came up
    // meanwhile. A thread that was up for the longest wait, though no run of
    // it ended (long runs, runs that never end), is replaced at once: thus
    // replaced, threads cannot come and go faster than that wait anyway. One
    // that exits in a handler's code (a module loaded, another still
    // loading) is that job's loss, not the start's nor the loading module's.
    if (lane.killReason === undefined && culprit === undefined && !this.#closed) {
      const starting = !lane.ready || lane.loading > 0;
      const longUp = lane.upAt !== undefined && performance.now() - lane.upAt >= RESTART_MOST_MS;
      if (starting || !(lane.ranJob || longUp)) {
        this.#startFailures = Math.max(this.#startFailures, lane.failuresBefore);
        this.#failedToStart(starting ? `a handler thread exited while it started: ${error}` : `a handler thread exited before it ran a job: ${error}`);
      }
      if (starting) for (const [url, loaded] of lane.modules) if (!loaded) this.#lostWhileLoading(url, error);
    }
    // Queued runs it started and had not said so are runs like the others; the rest never ran.
    for (const serial of unreportedStarts(lane.status, lane.reportedStarts)) this.#started(lane, serial);
    for (const [serial, placed] of [...this.#placed]) if (placed.lane === lane && placed.queued) this.#returned(lane, serial);
    const reason = lane.killReason ?? `the handler thread died: ${error}`;
    const blamed = culprit === undefined ? undefined : this.#placed.get(culprit);
    const runs: [number, Placed][] = [];
    for (const entry of this.#placed) if (entry[1].lane === lane) runs.push(entry);
    // The culprit last: each bystander's loss can still name the job that caused it.
    runs.sort((a, b) => Number(a[0] === culprit) - Number(b[0] === culprit));
    for (const [serial, placed] of runs) {
      this.#unplace(serial, placed);
      const other = blamed !== undefined && blamed.share !== placed.share ? `job ${JSON.stringify(blamed.id)} of type ${JSON.stringify(blamed.share.jobType)}` : undefined;
      placed.share.events.lost(serial, culprit, reason, other);
    }
    for (const share of lane.shares) {
      share.lanes.delete(lane);
      if (share.runs === 0) share.emptied?.();
    }
    if (!this.#closed && this.#liveLanes() < this.size) this.#newLane();
    // The lanes left may be all that a load waited for.
    for (const url of this.#loads.keys()) this.#settleLoad(url);
  }

  /** The watchdog runs as often as the most watchful processor needs. */
  #watch(): void {
    let least = Number.POSITIVE_INFINITY;
    for (const share of this.#shares.values()) least = Math.min(least, share.stuckThreadMs);
    const every = Number.isFinite(least) ? Math.max(10, Math.min(1000, least / 4)) : Number.POSITIVE_INFINITY;
    if (every === this.#watchEvery || this.#closed) return;
    this.#watchEvery = every;
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
    this.#watchdog = undefined;
    if (!Number.isFinite(every)) return;
    this.#watchdog = setInterval(() => this.#checkStuck(), every);
    this.#watchdog.unref();
  }

  #checkStuck(): void {
    const now = performance.now();
    for (const lane of this.#lanes) {
      if (!lane.ready || lane.dead || lane.killReason !== undefined) continue;
      const tick = Atomics.load(lane.status, TICK);
      // A thread busy importing a module ticks late and is not stuck; one
      // in a handler's code is, however many modules wait to load there
      // (they cannot while it is stuck).
      const importing = lane.loading > 0 && Atomics.load(lane.status, CURRENT) === NO_JOB;
      if (tick !== lane.lastTick || importing) {
        lane.lastTick = tick;
        lane.lastTickAt = now;
        continue;
      }
      if (lane.jobs === 0) continue;
      let limit = Number.POSITIVE_INFINITY;
      for (const share of lane.shares) if (share.runs > 0) limit = Math.min(limit, share.stuckThreadMs);
      if (now - lane.lastTickAt > limit) this.#kill(lane, `the handler thread made no progress for ${Math.round(now - lane.lastTickAt)} ms`);
    }
  }
}

function send(lane: Lane, message: ToLane): void {
  if (!lane.dead) lane.port.postMessage(message);
}
