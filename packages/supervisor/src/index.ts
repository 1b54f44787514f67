// The public surface of @jobtree/supervisor, picked by hand.
export { SupervisorError, type SupervisorErrorCode } from './errors.js';
export type {
  ActorStart,
  AnyActorDefinition,
  AutoShutdown,
  AutoShutdownEvent,
  ChildCounts,
  ChildExitedEvent,
  ChildInfo,
  ChildRestartedEvent,
  ChildSpawnOptions,
  ChildSpec,
  ChildStartFunction,
  ChildStartedEvent,
  ChildType,
  IntensityReachedEvent,
  ResolvedChildSpec,
  RestartType,
  Shutdown,
  Strategy,
  SupervisorEventTypes,
  SupervisorEvents,
  SupervisorSpec,
} from './interfaces.js';
export {
  type StartSupervisorOptions,
  Supervisor,
  type SupervisorChildOptions,
  type SupervisorChildSpec,
  actorStart,
  createSupervisorEvents,
  startSupervisor,
  supervisorChild,
} from './supervisor.js';
export type { SupervisorRequest } from './supervisor-protocol.js';
