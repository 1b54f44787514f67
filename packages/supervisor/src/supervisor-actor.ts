// Re-creates OTP's supervisor behaviour, the base of couch_jobs_sup and couch_replicator_sup.
//
// A supervisor is an actor on the main thread that traps exits: every child
// is linked to it, so a child's death arrives as an EXIT message, and the
// supervisor decides from the child's restart type and its own strategy what
// to restart. Its args are passed by reference (main placement), which lets
// child specs carry functions and actor definitions and lets it emit events
// on the emitter its handle holds.

import { defineActor } from '@jobtree/actors';
import type { ActorId, Behaviour, CallResult, SystemMessage, TimeoutMessage } from '@jobtree/actors';
import { SupervisorError, type SupervisorErrorData } from './errors.js';
import type { SupervisorEvents, SupervisorSpec } from './interfaces.js';
import { checkSupervisorSpec } from './specs.js';
import { SupervisorProcess } from './supervisor-process.js';
import { type SupervisorRequest, fail, isRequest, ok } from './supervisor-protocol.js';

/** Where `init` leaves why startup failed, for `startSupervisor` to throw (args are shared by reference). */
export interface StartupReport {
  failure?: SupervisorErrorData;
}

export interface SupervisorArgs {
  spec: SupervisorSpec;
  events: SupervisorEvents;
  /** The actor whose EXIT makes this supervisor shut down (its own supervisor). */
  parent?: ActorId;
  startup: StartupReport;
}

/** The reply to a call of the handle; `stop` also ends the supervisor. */
async function handleCall(msg: unknown, supervisor: SupervisorProcess): Promise<CallResult<SupervisorProcess>> {
  if (!isRequest(msg)) return { reply: fail({ code: 'invalid_request', message: 'not a supervisor request' }) };
  switch (msg.type) {
    case 'start_child':
      return { reply: await supervisor.startChild(msg.child) };
    case 'terminate_child':
      return { reply: await supervisor.terminateChild(msg.target, msg.byActor) };
    case 'restart_child':
      return { reply: await supervisor.restartChild(msg.id) };
    case 'delete_child':
      return { reply: supervisor.deleteChild(msg.id) };
    case 'get_childspec':
      return { reply: supervisor.getChildspec(msg.target, msg.byActor) };
    case 'which_child':
      return { reply: supervisor.whichChild(msg.target, msg.byActor) };
    case 'which_children':
      return { reply: ok(supervisor.whichChildren()) };
    case 'count_children':
      return { reply: ok(supervisor.countChildren()) };
    case 'stop':
      await supervisor.terminateAll();
      return { reply: ok(undefined), stop: 'shutdown' };
    case 'try_again_restart':
      return { reply: fail({ code: 'invalid_request', message: 'try_again_restart is cast by the supervisor to itself' }) };
  }
}

const behaviour: Behaviour<SupervisorRequest, SupervisorArgs, SupervisorProcess> = {
  async init(args, ctx) {
    ctx.trapExit(true);
    const spec = checkSupervisorSpec(args.spec);
    const supervisor = new SupervisorProcess(ctx, spec, args.events, args.parent);
    const failure = await supervisor.startChildren();
    if (failure !== undefined) {
      args.startup.failure = failure;
      throw new SupervisorError(failure);
    }
    return supervisor;
  },

  handleCall(msg, supervisor) {
    return handleCall(msg, supervisor);
  },

  async handleCast(msg, supervisor) {
    if (isRequest(msg) && msg.type === 'try_again_restart') await supervisor.tryAgainRestart(msg.key);
    return supervisor;
  },

  async handleInfo(msg: SystemMessage | TimeoutMessage, supervisor) {
    // DOWNs of monitors from a finished shutdown and stray timers need no action.
    if (msg.type === 'EXIT') await supervisor.onExit(msg);
    return supervisor;
  },

  async terminate(_reason, supervisor) {
    await supervisor.terminateAll();
  },
};

export default defineActor(import.meta.url, behaviour);
