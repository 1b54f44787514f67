// The entry module of a host worker thread: one ActorHost wired to the main
// thread (a MessagePort of its own, see HostThreadData.main) and, through MessagePorts set up by the main thread, to
// every other host thread directly.

import { parentPort, workerData } from 'node:worker_threads';
import { ActorHost } from './actor-host.js';
import type { MessageSource } from './wire.js';
import { MAIN_THREAD } from './actor-id.js';
import { loadDefinition } from './define-actor.js';
import { ActorError } from './errors.js';
import { Kind } from './envelope.js';
import { crashReason } from './exit-reason.js';
import type { Coordinator, HostThreadData, SpawnOrder, SpawnRequest } from './host-protocol.js';
import type { ActorId, ExitReason } from './interfaces.js';

if (parentPort === null) throw new ActorError('bad_argument', 'host-thread.ts runs only as a worker thread');
const data = workerData as HostThreadData;
const toMain = data.main as unknown as MessageSource;
const host = new ActorHost(data.thread, Math.max(data.thread, ...data.peers.map((peer) => peer.thread)), new Int32Array(data.status));
for (const [name, id] of data.names) host.names.set(name, id);
host.setCorePort(data.core);

const spawnRequests = new Map<number, { resolve: (id: ActorId) => void; reject: (error: ActorError) => void }>();
let spawnSeq = 0;

const coordinator: Coordinator = {
  requestSpawn(request: SpawnRequest): Promise<ActorId> {
    return new Promise((resolve, reject) => {
      const ref = ++spawnSeq;
      spawnRequests.set(ref, { resolve, reject });
      host.sendControl(MAIN_THREAD, Kind.spawnRequest, '', ref, { request, thread: data.thread });
    });
  },
  requestKill(id: ActorId): void {
    host.sendControl(MAIN_THREAD, Kind.killRequest, id, 0, null);
  },
  registerName(id: ActorId, name: string): void {
    host.sendControl(MAIN_THREAD, Kind.register, '', 0, { id, name });
  },
  actorExited(id: ActorId, _name: string | undefined, reason: ExitReason): void {
    host.sendControl(MAIN_THREAD, Kind.exited, id, 0, reason);
  },
};
host.coordinator = coordinator;

host.onControl = (env) => {
  switch (env.kind) {
    case Kind.spawn:
      startOrder(env.ref, env.body);
      break;
    case Kind.spawnOutcome: {
      const request = spawnRequests.get(env.ref);
      if (request === undefined) break;
      spawnRequests.delete(env.ref);
      const outcome = env.body;
      if ('id' in outcome) request.resolve(outcome.id);
      else request.reject(new ActorError(outcome.code, outcome.message, outcome.reason));
      break;
    }
    case Kind.stopAll:
      void host.stopAll('shutdown', data.shutdownTimeoutMs).then(() => {
        host.sendControl(MAIN_THREAD, Kind.stopped, '', data.thread, null);
        host.flush();
      });
      break;
    default:
    // Unknown thread-level messages are ignored: they cannot be blamed on an actor.
  }
};

function startOrder(ref: number, order: SpawnOrder): void {
  loadDefinition(order.module, order.exportName).then(
    (definition) => {
      host.startActor(order, definition.behaviour, (id, failure) => {
        if (failure === undefined) host.sendControl(MAIN_THREAD, Kind.spawned, '', ref, id);
        else host.sendControl(MAIN_THREAD, Kind.spawnFailed, '', ref, failure);
      });
      host.runReady();
    },
    (error: unknown) => host.sendControl(MAIN_THREAD, Kind.spawnFailed, '', ref, crashReason(error)),
  );
}

// A rejection nobody awaited (say, `void ctx.call(…)` that timed out) must not
// take the whole thread, and with it every co-hosted actor, down.
process.on('unhandledRejection', (reason) => {
  process.emitWarning(`unhandled rejection in actor host thread ${data.thread}: ${String(reason)}`);
});

host.addPeer(MAIN_THREAD, toMain);
host.attachKillPort(data.kills);
for (const peer of data.peers) host.addPeer(peer.thread, peer.port as unknown as MessageSource);
host.sendControl(MAIN_THREAD, Kind.ready, '', data.thread, null);
