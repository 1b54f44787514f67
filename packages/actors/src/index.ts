// The public surface of @jobtree/actors, picked by hand.
export type {
  ActorId,
  ActorRef,
  ActorContext,
  ActorDefinition,
  ActorOperations,
  ActorSystem,
  ActorSystemEvents,
  ActorSystemOptions,
  Behaviour,
  CallResult,
  DownMessage,
  ErrorInfo,
  ExitMessage,
  ExitReason,
  Inbox,
  InboxOptions,
  MonitorRef,
  Placement,
  Remote,
  SpawnOptions,
  SystemMessage,
  ThreadId,
  TimeoutMessage,
} from './interfaces.js';
export { createActorSystem } from './actor-system.js';
export { defineActor } from './define-actor.js';
export { ActorError, type ActorErrorCode, describeReason } from './errors.js';
export { errorInfo, isExitReason } from './exit-reason.js';
export { MAX_TIMER_MS } from './max-timer.js';
