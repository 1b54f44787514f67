// Actor ids name their host thread, Erlang-pid style: `<thread.serial>`. Any
// thread can route a message from the id alone, with no lookup table, and a
// thread number is never reused, so an id is never reused either.

import type { ActorId, ThreadId } from './interfaces.js';

/** The main thread is thread 0; `<0.0>` stands for the system itself (calls and monitors made from outside any actor). */
export const MAIN_THREAD: ThreadId = 0;
export const SYSTEM_ID: ActorId = '<0.0>';

export function makeActorId(thread: ThreadId, serial: number): ActorId {
  return `<${thread}.${serial}>`;
}

/** The thread an id lives on, or -1 when the string is not an actor id. */
export function threadOfId(id: string): ThreadId {
  if (id.charCodeAt(0) !== 60 /* < */) return -1;
  const dot = id.indexOf('.', 2);
  if (dot < 0) return -1;
  const thread = Number(id.slice(1, dot));
  return Number.isInteger(thread) ? thread : -1;
}

/** The serial part of an id (`<thread.serial>`), or -1 when the string is not an actor id. */
export function serialOfId(id: string): number {
  const dot = id.indexOf('.', 2);
  if (dot < 0 || id.charCodeAt(id.length - 1) !== 62 /* > */) return -1;
  const serial = Number(id.slice(dot + 1, -1));
  return Number.isInteger(serial) ? serial : -1;
}

export function isActorId(value: string): boolean {
  return threadOfId(value) >= 0 && value.charCodeAt(value.length - 1) === 62; /* > */
}
