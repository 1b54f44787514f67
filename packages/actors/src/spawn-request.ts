// A spawn as it leaves the spawner's thread: checked there (bad definitions,
// placements and names fail at once, with the spawner's stack), then sent to
// the main thread, which places it.

import { isActorId } from './actor-id.js';
import { isActorDefinition } from './define-actor.js';
import { ActorError } from './errors.js';
import type { SpawnRequest } from './host-protocol.js';
import { OptionNames } from './option-names.js';
import type { ActorDefinition, ActorId, MonitorRef, SpawnOptions } from './interfaces.js';

const SPAWN_OPTIONS = new OptionNames('spawn', ['name', 'placement', 'link', 'monitor'], { thread: 'placement', dedicated: 'placement' });

/** Names cannot look like ids, so that a string target is told apart by its first character. */
export function checkName(name: unknown): void {
  if (typeof name !== 'string' || name.length === 0 || isActorId(name)) {
    throw new ActorError('bad_argument', `not a valid actor name: ${String(name)}`);
  }
}

/**
 * The request for `spawn(definition, args, options)` made by `spawner`
 * (undefined: the system) holding monitor `monitorRef` if it asked for one.
 * `byReference`: the spawn is made on the main thread, which may keep a
 * main-placement definition as it is.
 */
export function spawnRequest(
  definition: ActorDefinition<unknown, unknown>,
  args: unknown,
  options: SpawnOptions,
  spawner: ActorId | undefined,
  monitorRef: MonitorRef | undefined,
  byReference: boolean,
): SpawnRequest {
  if (!isActorDefinition(definition)) throw new ActorError('bad_argument', 'spawn needs an actor definition (defineActor)');
  if (typeof options !== 'object' || options === null) throw new ActorError('bad_argument', `the options of spawn are an object, got ${String(options)}`);
  SPAWN_OPTIONS.check(options);
  const placement = options.placement ?? 'pool';
  if (placement !== 'pool' && placement !== 'dedicated' && placement !== 'main') {
    throw new ActorError('bad_argument', `unknown placement ${String(placement)}`);
  }
  if (options.name !== undefined) checkName(options.name);
  const request: SpawnRequest = {
    module: definition.module,
    exportName: definition.exportName ?? 'default',
    args,
    placement,
    name: options.name,
    linkTo: spawner !== undefined && options.link === true ? spawner : undefined,
    monitor: monitorRef !== undefined && spawner !== undefined ? { ref: monitorRef, by: spawner } : undefined,
  };
  if (placement === 'main' && byReference) request.definition = definition;
  return request;
}
