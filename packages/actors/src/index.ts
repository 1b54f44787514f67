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
// the known names of an options object (also used by @jobtree/supervisor's specs)
export { OptionNames } from './option-names.js';
// the first module of every thread jobtree starts (also the jobs application's handler threads)
export { THREAD_ENTRY, threadEntry, type ThreadEntryData } from './thread-entry.js';
// the parent's flags without tsx, for threads that run built JavaScript only, and whether a Worker takes flags given explicitly (the jobs application's handler threads)
export { execArgvWithoutTsx, workerTakesExecArgv } from './worker-exec-argv.js';
