// An actor definition names the module it lives in, because a host thread
// cannot receive functions: it imports the module by URL and takes the
// definition from there.

import { ActorError } from './errors.js';
import type { ActorDefinition, Behaviour } from './interfaces.js';

/**
 * Defines an actor. Export the result as the module's default export (or
 * name the export with `exportName`), so host threads can import it.
 *
 * @example
 * export default defineActor(import.meta.url, {
 *   init: (start: number) => start,
 *   handleCast: (msg: { add: number }, total) => total + msg.add,
 * });
 */
export function defineActor<Msg, Args, State>(
  module: string,
  behaviour: Behaviour<Msg, Args, State>,
  exportName = 'default',
): ActorDefinition<Msg, Args> {
  if (typeof module !== 'string' || !/^[a-z][a-z0-9+.-]*:/i.test(module)) {
    throw new ActorError('bad_argument', `defineActor needs the module URL (import.meta.url), got ${String(module)}`);
  }
  if (typeof behaviour !== 'object' || behaviour === null || typeof behaviour.init !== 'function') {
    throw new ActorError('bad_argument', `defineActor(${module}): the behaviour needs an init function`);
  }
  return Object.freeze({ module, behaviour: behaviour as Behaviour<Msg, Args, unknown>, exportName });
}

export function isActorDefinition(value: unknown): value is ActorDefinition<unknown, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const def = value as { module?: unknown; behaviour?: { init?: unknown } };
  return typeof def.module === 'string' && typeof def.behaviour === 'object' && def.behaviour !== null && typeof def.behaviour.init === 'function';
}

const loaded = new Map<string, Promise<ActorDefinition<unknown, unknown>>>();

/** Imports a definition by module URL and export name, once per thread. */
export function loadDefinition(module: string, exportName: string): Promise<ActorDefinition<unknown, unknown>> {
  const key = `${exportName}@${module}`;
  let definition = loaded.get(key);
  if (definition === undefined) {
    definition = import(module).then((namespace: Record<string, unknown>) => {
      const value = namespace[exportName];
      if (!isActorDefinition(value)) {
        throw new ActorError('bad_argument', `${module}: its ${exportName} export is not an actor definition (defineActor)`);
      }
      return value;
    });
    // A failed import is not cached: the module may be fixed or appear later.
    definition.catch(() => loaded.delete(key));
    loaded.set(key, definition);
  }
  return definition;
}
