// OTP's check_flags/check_childspec: supervisor and child specs are checked
// and given their defaults once, before anything starts, so that a typo is a
// clear `invalid_spec` error instead of a supervisor crashing later.

import { OptionNames } from '@jobtree/actors';
import { SupervisorError } from './errors.js';
import type {
  ActorStart,
  AutoShutdown,
  ChildSpec,
  ChildStartFunction,
  ChildType,
  ResolvedChildSpec,
  RestartType,
  Shutdown,
  Strategy,
  SupervisorSpec,
} from './interfaces.js';

/** A child spec with every default filled in. */
export type CheckedChildSpec = ResolvedChildSpec;

export interface CheckedSupervisorSpec {
  readonly strategy: Strategy;
  readonly intensity: number;
  readonly period: number;
  readonly autoShutdown: AutoShutdown;
  readonly children: readonly CheckedChildSpec[];
}

export const DEFAULT_INTENSITY = 1;
export const DEFAULT_PERIOD_MS = 5000;
export const DEFAULT_WORKER_SHUTDOWN_MS = 5000;

const STRATEGIES: readonly Strategy[] = ['one_for_one', 'one_for_all', 'rest_for_one', 'simple_one_for_one'];
const RESTART_TYPES: readonly RestartType[] = ['permanent', 'transient', 'temporary'];
const CHILD_TYPES: readonly ChildType[] = ['worker', 'supervisor'];
const AUTO_SHUTDOWNS: readonly AutoShutdown[] = ['never', 'any_significant', 'all_significant'];

/** `events` is the nested supervisor's emitter that `supervisorChild` puts in its spec. */
const CHILD_SPEC = new OptionNames('a child spec', ['id', 'start', 'restart', 'shutdown', 'type', 'significant', 'events'], {
  args: "a child's args go in its start: actorStart(definition, args)",
  restartType: 'restart',
});
const SUPERVISOR_SPEC = new OptionNames('a supervisor spec', ['strategy', 'intensity', 'period', 'autoShutdown', 'children'], {
  maxRestarts: 'intensity',
  maxR: 'intensity',
  maxT: 'period',
});
const CHILD_SPAWN_OPTIONS = new OptionNames("a child's spawn options", ['name', 'placement']);
const START_SUPERVISOR_OPTIONS = new OptionNames('startSupervisor', ['name', 'link', 'events']);
const SUPERVISOR_CHILD_OPTIONS = new OptionNames('supervisorChild', ['restart', 'shutdown', 'significant', 'name']);

function invalid(message: string, childId?: string): SupervisorError {
  return new SupervisorError(childId === undefined ? { code: 'invalid_spec', message } : { code: 'invalid_spec', message, childId });
}

/** Refuses a key of `options` that `names` does not list, with `invalid_spec` naming it. */
function checkNames(options: object, names: OptionNames, childId?: string): void {
  const unknown = names.unknownIn(options);
  if (unknown !== undefined) throw invalid(childId === undefined ? unknown : `child '${childId}': ${unknown}`, childId);
}

/** `startSupervisor`'s options: an object with only `name`, `link` and `events`. */
export function checkStartSupervisorOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null) throw invalid(`the options of startSupervisor are an object, got ${String(options)}`);
  checkNames(options, START_SUPERVISOR_OPTIONS);
}

/** `supervisorChild`'s options: an object with only `restart`, `shutdown`, `significant` and `name`. */
export function checkSupervisorChildOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null) throw invalid(`the options of supervisorChild are an object, got ${String(options)}`);
  checkNames(options, SUPERVISOR_CHILD_OPTIONS);
}

function isActorStart(start: unknown): start is ActorStart {
  if (typeof start !== 'object' || start === null) return false;
  const actor = (start as { actor?: unknown }).actor;
  if (typeof actor !== 'object' || actor === null) return false;
  const definition = actor as { module?: unknown; behaviour?: unknown };
  return typeof definition.module === 'string' && typeof definition.behaviour === 'object' && definition.behaviour !== null;
}

function checkShutdown(value: unknown, type: ChildType, id: string): Shutdown {
  if (value === undefined) return type === 'supervisor' ? 'infinity' : DEFAULT_WORKER_SHUTDOWN_MS;
  if (value === 'brutal_kill' || value === 'infinity') return value;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
  throw invalid(`child '${id}': shutdown must be 'brutal_kill', 'infinity' or a whole number of ms >= 0, got ${String(value)}`, id);
}

/**
 * OTP's validSignificant: a significant child must be one that can end for good (transient or
 * temporary), under a supervisor that acts on it. `autoShutdown` is undefined when the supervisor
 * is not known yet (`supervisorChild`); its own supervisor checks that part when it gets the spec.
 */
function checkSignificant(value: unknown, restart: RestartType, autoShutdown: AutoShutdown | undefined, id: string): boolean {
  if (value === undefined || value === false) return false;
  if (value !== true) throw invalid(`child '${id}': significant must be true or false, got ${String(value)}`, id);
  if (restart === 'permanent') {
    throw invalid(`child '${id}': a significant child must be transient or temporary, not permanent`, id);
  }
  if (autoShutdown === 'never') {
    throw invalid(`child '${id}': a significant child needs a supervisor whose autoShutdown is not 'never'`, id);
  }
  return true;
}

/** Checks a child spec and fills in its defaults; `autoShutdown` is that of the supervisor it is for. */
export function checkChildSpec(spec: unknown, autoShutdown?: AutoShutdown): CheckedChildSpec {
  if (typeof spec !== 'object' || spec === null) throw invalid(`a child spec must be an object, got ${String(spec)}`);
  const raw = spec as Partial<Record<keyof ChildSpec, unknown>>;
  if (typeof raw.id !== 'string' || raw.id.length === 0) throw invalid('a child spec needs a non-empty string id');
  const id = raw.id;
  if (typeof raw.start !== 'function' && !isActorStart(raw.start)) {
    throw invalid(`child '${id}': start must be { actor: ActorDefinition, args?, options? } or a start function`, id);
  }
  if (isActorStart(raw.start) && (raw.start.options as { link?: unknown } | undefined)?.link !== undefined) {
    throw invalid(`child '${id}': start.options.link is not allowed, the supervisor links its children`, id);
  }
  checkNames(spec, CHILD_SPEC, id);
  if (isActorStart(raw.start) && typeof raw.start.options === 'object' && raw.start.options !== null) {
    checkNames(raw.start.options, CHILD_SPAWN_OPTIONS, id);
  }
  const restart = raw.restart ?? 'permanent';
  if (!RESTART_TYPES.includes(restart as RestartType)) {
    throw invalid(`child '${id}': restart must be one of ${RESTART_TYPES.join(', ')}, got ${String(restart)}`, id);
  }
  const type = raw.type ?? 'worker';
  if (!CHILD_TYPES.includes(type as ChildType)) {
    throw invalid(`child '${id}': type must be 'worker' or 'supervisor', got ${String(type)}`, id);
  }
  return {
    id,
    start: raw.start as ActorStart | ChildStartFunction,
    restart: restart as RestartType,
    shutdown: checkShutdown(raw.shutdown, type as ChildType, id),
    type: type as ChildType,
    significant: checkSignificant(raw.significant, restart as RestartType, autoShutdown, id),
  };
}

export function checkSupervisorSpec(spec: unknown): CheckedSupervisorSpec {
  if (typeof spec !== 'object' || spec === null) throw invalid(`a supervisor spec must be an object, got ${String(spec)}`);
  const raw = spec as Partial<Record<keyof SupervisorSpec, unknown>>;
  checkNames(spec, SUPERVISOR_SPEC);
  if (!STRATEGIES.includes(raw.strategy as Strategy)) {
    throw invalid(`strategy must be one of ${STRATEGIES.join(', ')}, got ${String(raw.strategy)}`);
  }
  const strategy = raw.strategy as Strategy;
  const intensity = raw.intensity ?? DEFAULT_INTENSITY;
  if (typeof intensity !== 'number' || !Number.isInteger(intensity) || intensity < 0) {
    throw invalid(`intensity must be a whole number >= 0, got ${String(intensity)}`);
  }
  const period = raw.period ?? DEFAULT_PERIOD_MS;
  if (typeof period !== 'number' || !Number.isFinite(period) || period <= 0) {
    throw invalid(`period must be a number of ms > 0, got ${String(period)}`);
  }
  const autoShutdown = raw.autoShutdown ?? 'never';
  if (!AUTO_SHUTDOWNS.includes(autoShutdown as AutoShutdown)) {
    throw invalid(`autoShutdown must be one of ${AUTO_SHUTDOWNS.join(', ')}, got ${String(autoShutdown)}`);
  }
  // As OTP: dynamic children come and go, so "the last significant one" has no meaning there.
  if (strategy === 'simple_one_for_one' && autoShutdown !== 'never') {
    throw invalid(`a simple_one_for_one supervisor cannot have autoShutdown '${String(autoShutdown)}'`);
  }
  if (!Array.isArray(raw.children)) throw invalid('children must be an array of child specs');
  const children = raw.children.map((child) => checkChildSpec(child, autoShutdown as AutoShutdown));
  if (strategy === 'simple_one_for_one' && children.length !== 1) {
    throw invalid(`a simple_one_for_one supervisor needs exactly one template child spec, got ${children.length}`);
  }
  const seen = new Set<string>();
  for (const child of children) {
    if (seen.has(child.id)) throw invalid(`two children have the id '${child.id}'`, child.id);
    seen.add(child.id);
  }
  return { strategy, intensity, period, autoShutdown: autoShutdown as AutoShutdown, children };
}
