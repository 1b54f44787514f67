// The handler threads: a piscina pool whose every thread runs one lane (a
// long task running many handlers, see lane-worker.ts). A batch of jobs goes
// in one message per lane: whole to the least busy lane when the lanes run
// through it quickly, else spread job by job over the least busy lanes (see
// ONE_LANE_BATCH_MS). A lane whose thread
// dies, or that stops ticking for `stuckThreadMs`, is gone with its thread;
// its jobs are reported lost with the culprit named (the job the thread was
// executing, or the one the scheduler ended the thread for), and the next
// jobs get a new lane on a new thread.

import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { JsonValue } from '@jobtree/core';
import { THREAD_ENTRY, threadEntry } from '@jobtree/actors';
import { Piscina } from 'piscina';
import type { HandlerRunner } from './handler-runner.js';
import type { AbortCause } from './interfaces.js';
import {
  type FromLane,
  type LaneRun,
  type LaneTask,
  type PackedRuns,
  RESULT_FIELDS,
  type SerializedError,
  type ToLane,
  packRun,
} from './lane-protocol.js';
import { CURRENT, NO_JOB, TICK, createLaneStatus } from './lane-status.js';

export interface HandlerPoolEvents {
  /** A handler ended: resolved (`ok`) with its result, or rejected with its error. */
  settled(serial: number, ok: boolean, outcome: unknown): void;
  /** A handler called `ctx.update(data)`; `reply` answers it (with an error when the job is not the processor's any more). */
  update(serial: number, data: JsonValue, reply: (error?: SerializedError & { code: string }) => void): void;
  /**
   * A handler's thread is gone, and the run `serial` with it. `culprit` is
   * the run that took the thread down, when one is known: the one whose code
   * the thread was executing when it died or got stuck, or the one the
   * thread was ended for (see killThreadOf). It may be `serial` itself (a
   * crash of that run), another run of the lane (this one is a bystander;
   * the culprit is reported last), or a run that had already ended but left
   * code behind. `undefined`: no job's code was running (the thread was
   * terminated from outside, or died in code no job started).
   */
  lost(serial: number, culprit: number | undefined, reason: string): void;
}

export interface HandlerPoolOptions {
  handlerUrl: string;
  /** The type of every job the pool runs. */
  jobType: string;
  threads: number;
  stuckThreadMs: number;
  events: HandlerPoolEvents;
  /** A batch the lanes run through within this many ms goes to one lane whole. @default ONE_LANE_BATCH_MS */
  oneLaneBatchMs?: number;
}

interface Lane {
  readonly port: MessagePort;
  readonly status: Int32Array;
  readonly controller: AbortController;
  /** Runs sent and not ended (which ones: the pool's map of runs to lanes). */
  jobs: number;
  threadId: number | undefined;
  ready: boolean;
  broken: SerializedError | undefined;
  lastTick: number;
  lastTickAt: number;
  /** Why the main thread ended it, when it did. */
  killReason: string | undefined;
  /** The run the main thread ended it for, when it was one job's fault. */
  killedFor: number | undefined;
  dead: boolean;
}

/**
 * A batch that one lane runs through within this long (by the lanes' measured
 * time per run) goes to that lane whole. Every message to a lane whose thread
 * sleeps costs the main thread a wake-up of that thread, more than a second
 * thread would save on so little work.
 * Longer batches, and every batch until a lane has first run dry, are spread
 * job by job over the least busy lanes.
 */
export const ONE_LANE_BATCH_MS = 5;

/** Each handler thread runs the lane (see lane-worker.ts). */
const LANE_ENTRY = threadEntry(import.meta.url, './lane-worker');

export class HandlerPool implements HandlerRunner {
  readonly #options: HandlerPoolOptions;
  readonly #pool: Piscina<LaneTask, void>;
  readonly #lanes = new Set<Lane>();
  readonly #laneOf = new Map<number, Lane>();
  /** How long a run keeps a lane busy (ms, averaged over the lanes' busy spells); unknown until a lane first runs dry. */
  #runMs = Number.POSITIVE_INFINITY;
  readonly #watchdog: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: HandlerPoolOptions) {
    this.#options = options;
    this.#pool = new Piscina<LaneTask, void>({
      filename: THREAD_ENTRY.href,
      minThreads: options.threads,
      maxThreads: options.threads,
      // One lane per thread: a lane's thread is what a stuck handler costs.
      concurrentTasksPerWorker: 1,
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: { entry: LANE_ENTRY },
    });
    if (Number.isFinite(options.stuckThreadMs)) {
      const every = Math.max(10, Math.min(1000, options.stuckThreadMs / 4));
      this.#watchdog = setInterval(() => this.#checkStuck(), every);
      this.#watchdog.unref();
    }
  }

  /** The pool's worker threads (for monitoring and fault injection). */
  get threads(): readonly import('node:worker_threads').Worker[] {
    return this.#pool.threads;
  }

  /** The thread id running a job's handler, once its lane has started. */
  threadIdOf(serial: number): number | undefined {
    return this.#laneOf.get(serial)?.threadId;
  }

  /** Whether a job's lane has loaded the handler module (so its handler has been called or is about to be). */
  isStarted(serial: number): boolean {
    return this.#laneOf.get(serial)?.ready === true;
  }

  /**
   * Sends runs to lanes, one message per lane: a batch short enough to the
   * least busy lane whole (see ONE_LANE_BATCH_MS), any other each run to the
   * least busy lane.
   */
  start(runs: readonly LaneRun[]): void {
    if (runs.length === 0) return;
    if (runs.length * this.#runMs <= (this.#options.oneLaneBatchMs ?? ONE_LANE_BATCH_MS)) {
      const lane = this.#pickLane();
      const packed: PackedRuns = [];
      for (const run of runs) {
        lane.jobs++;
        this.#laneOf.set(run.serial, lane);
        packRun(packed, run);
      }
      if (lane.broken !== undefined) this.#failBroken(lane);
      else send(lane, { kind: 'start', runs: packed });
      return;
    }
    const batches = new Map<Lane, PackedRuns>();
    for (const run of runs) {
      const lane = this.#pickLane();
      lane.jobs++;
      this.#laneOf.set(run.serial, lane);
      const batch = batches.get(lane);
      if (batch === undefined) {
        const packed: PackedRuns = [];
        packRun(packed, run);
        batches.set(lane, packed);
      } else packRun(batch, run);
    }
    for (const [lane, batch] of batches) {
      if (lane.broken !== undefined) this.#failBroken(lane);
      else send(lane, { kind: 'start', runs: batch });
    }
  }

  /** Aborts the signals of running handlers. */
  abort(serials: readonly number[], cause: AbortCause): void {
    const byLane = new Map<Lane, number[]>();
    for (const serial of serials) {
      const lane = this.#laneOf.get(serial);
      if (lane === undefined) continue;
      const list = byLane.get(lane);
      if (list === undefined) byLane.set(lane, [serial]);
      else list.push(serial);
    }
    for (const [lane, list] of byLane) send(lane, { kind: 'abort', serials: list, cause });
  }

  /** Terminates the thread running a job's handler, that job's fault (its other jobs are reported lost as bystanders). */
  killThreadOf(serial: number, reason: string): void {
    const lane = this.#laneOf.get(serial);
    if (lane === undefined || lane.dead || lane.killReason !== undefined) return;
    lane.killedFor = serial;
    this.#kill(lane, reason);
  }

  /** Terminates every thread at once; running jobs are reported lost. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
    for (const lane of this.#lanes) {
      lane.killReason ??= 'the scheduler stopped';
      send(lane, { kind: 'close' });
    }
    await this.#pool.destroy();
  }

  #pickLane(): Lane {
    let best: Lane | undefined;
    for (const lane of this.#lanes) {
      if (lane.dead || lane.killReason !== undefined) continue;
      if (best === undefined || lane.jobs < best.jobs) best = lane;
    }
    if (best === undefined || (best.jobs > 0 && this.#liveLanes() < this.#options.threads)) return this.#newLane();
    return best;
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
      threadId: undefined,
      ready: false,
      broken: undefined,
      lastTick: 0,
      lastTickAt: performance.now(),
      killReason: undefined,
      killedFor: undefined,
      dead: false,
    };
    this.#lanes.add(lane);
    lane.port.on('message', (message: FromLane) => this.#receive(lane, message));
    const task: LaneTask = { handlerUrl: this.#options.handlerUrl, jobType: this.#options.jobType, port: channel.port2, status: buffer };
    this.#pool
      .run(task, { transferList: [channel.port2], signal: lane.controller.signal })
      .then(
        () => this.#ended(lane, 'the handler thread ended its lane'),
        (error: unknown) => this.#ended(lane, error instanceof Error ? error.message : String(error)),
      );
    return lane;
  }

  #receive(lane: Lane, message: FromLane): void {
    switch (message.kind) {
      case 'ready':
        lane.ready = true;
        lane.threadId = message.threadId;
        lane.lastTickAt = performance.now();
        break;
      case 'broken':
        lane.broken = message.error;
        // Every job sent before the lane knew is answered now; later ones at once (see start).
        break;
      case 'settled': {
        const { results, spell } = message;
        if (spell !== undefined && spell.runs > 0) {
          const perRun = spell.ms / spell.runs;
          this.#runMs = Number.isFinite(this.#runMs) ? (3 * this.#runMs + perRun) / 4 : perRun;
        }
        const { settled } = this.#options.events;
        for (let i = 0; i < results.length; i += RESULT_FIELDS) {
          const serial = results[i] as number;
          if (this.#laneOf.get(serial) !== lane) continue;
          this.#laneOf.delete(serial);
          lane.jobs--;
          settled(serial, results[i + 1] === true, results[i + 2]);
        }
        break;
      }
      case 'update':
        if (this.#laneOf.get(message.serial) !== lane) {
          send(lane, { kind: 'updated', request: message.request, error: { name: 'SchedulerError', code: 'halt', message: 'the job has ended' } });
          break;
        }
        this.#options.events.update(message.serial, message.data, (error) =>
          send(lane, error === undefined ? { kind: 'updated', request: message.request } : { kind: 'updated', request: message.request, error }),
        );
        break;
    }
    if (lane.broken !== undefined && lane.jobs > 0) this.#failBroken(lane);
  }

  /** A lane whose handler module did not load answers every job sent to it with that error. */
  #failBroken(lane: Lane): void {
    const error = lane.broken as SerializedError;
    for (const serial of this.#runsOf(lane)) {
      lane.jobs--;
      this.#laneOf.delete(serial);
      this.#options.events.settled(serial, false, error);
    }
  }

  /** The runs sent to a lane and not ended (a scan: only for a lane that broke or died). */
  #runsOf(lane: Lane): number[] {
    const serials: number[] = [];
    for (const [serial, of] of this.#laneOf) if (of === lane) serials.push(serial);
    return serials;
  }

  #kill(lane: Lane, reason: string): void {
    if (lane.dead || lane.killReason !== undefined) return;
    lane.killReason = reason;
    lane.controller.abort(reason);
  }

  #ended(lane: Lane, error: string): void {
    if (lane.dead) return;
    lane.dead = true;
    this.#lanes.delete(lane);
    lane.port.close();
    const executing = Atomics.load(lane.status, CURRENT);
    const culprit = lane.killedFor ?? (executing === NO_JOB ? undefined : executing);
    const reason = lane.killReason ?? `the handler thread died: ${error}`;
    // The culprit last: each bystander's loss can still name the job that caused it.
    const serials = this.#runsOf(lane).sort((a, b) => Number(a === culprit) - Number(b === culprit));
    lane.jobs = 0;
    for (const serial of serials) {
      this.#laneOf.delete(serial);
      this.#options.events.lost(serial, culprit, reason);
    }
  }

  #checkStuck(): void {
    const now = performance.now();
    for (const lane of this.#lanes) {
      if (!lane.ready || lane.dead || lane.killReason !== undefined) continue;
      const tick = Atomics.load(lane.status, TICK);
      if (tick !== lane.lastTick) {
        lane.lastTick = tick;
        lane.lastTickAt = now;
      } else if (now - lane.lastTickAt > this.#options.stuckThreadMs && lane.jobs > 0) {
        this.#kill(lane, `the handler thread made no progress for ${Math.round(now - lane.lastTickAt)} ms`);
      }
    }
  }
}

function send(lane: Lane, message: ToLane): void {
  if (!lane.dead) lane.port.postMessage(message);
}
