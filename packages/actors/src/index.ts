// The public surface of @jobtree/actors, picked by hand.
export type {
  ActorId,
  ActorRef,
  ActorContext,
  ActorDefinition,
  ActorOperations,
  Behaviour,
  CallResult,
  DownMessage,
  ErrorInfo,
  ExitMessage,
  ExitReason,
  MonitorRef,
  Placement,
  SpawnOptions,
  SystemMessage,
  TimeoutMessage,
} from './interfaces.js';
