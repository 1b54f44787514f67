// Writes whose key and value buffers the caller hands over to the
// transaction: the embedded engine keeps them as they are instead of copying
// them. Internal to the package (not exported from its index): the jobs
// layer builds a fresh buffer for every key and record it writes and never
// changes it again, so the copy that `Transaction.set` makes for any other
// caller (who may reuse its buffer) is pure cost on the hot path. On any
// other transaction (FoundationDB, a wrapper) these fall back to the public
// methods, which copy.
//
// The rule for a caller: after the call, neither it nor any code it shares
// the buffer with changes its bytes. Reading a handed-over key or set value
// later is fine (the store never changes those); a stamped-value template
// is stamped in place at commit, so its bytes are not the template's then.

import type { Transaction } from '../interfaces.js';

/** `set(key, value)` keeping both buffers. */
export const SET_HANDED_OVER: unique symbol = Symbol('jobtree.setHandedOver');
/** `clear(key)` keeping the key buffer. */
export const CLEAR_HANDED_OVER: unique symbol = Symbol('jobtree.clearHandedOver');
/** `setVersionstampedValue(key, template, offset)` keeping both buffers (the commit fills the stamp into the template). */
export const SET_STAMPED_VALUE_HANDED_OVER: unique symbol = Symbol('jobtree.setStampedValueHandedOver');

/**
 * `setVersionstampedKey(template, offset, value)` keeping the value buffer;
 * the key template is still copied (it is stamped in place, and callers
 * reuse one template per type).
 */
export const SET_STAMPED_KEY_HANDED_OVER: unique symbol = Symbol('jobtree.setStampedKeyHandedOver');

/** What a transaction that can keep handed-over buffers implements. */
export interface HandedOverWrites {
  [SET_HANDED_OVER](key: Buffer, value: Buffer): void;
  [CLEAR_HANDED_OVER](key: Buffer): void;
  [SET_STAMPED_VALUE_HANDED_OVER](key: Buffer, template: Buffer, offset: number): void;
  [SET_STAMPED_KEY_HANDED_OVER](template: Buffer, offset: number, value: Buffer): void;
}

function handedOver(tx: Transaction): Partial<HandedOverWrites> {
  return tx as Transaction & Partial<HandedOverWrites>;
}

/**
 * `tx.set(key, value)` for buffers the caller will never change again (nor
 * share with code that might): the transaction may keep them.
 */
export function setHandedOver(tx: Transaction, key: Buffer, value: Buffer): void {
  const target = handedOver(tx);
  if (target[SET_HANDED_OVER] !== undefined) target[SET_HANDED_OVER](key, value);
  else tx.set(key, value);
}

/** `tx.clear(key)` for a key buffer the caller will never change again. */
export function clearHandedOver(tx: Transaction, key: Buffer): void {
  const target = handedOver(tx);
  if (target[CLEAR_HANDED_OVER] !== undefined) target[CLEAR_HANDED_OVER](key);
  else tx.clear(key);
}

/** `tx.setVersionstampedValue(key, template, offset)` for buffers the caller will never use again. */
export function setVersionstampedValueHandedOver(tx: Transaction, key: Buffer, template: Buffer, offset: number): void {
  const target = handedOver(tx);
  if (target[SET_STAMPED_VALUE_HANDED_OVER] !== undefined) target[SET_STAMPED_VALUE_HANDED_OVER](key, template, offset);
  else tx.setVersionstampedValue(key, template, offset);
}

/** `tx.setVersionstampedKey(template, offset, value)` for a value buffer the caller will never change again. */
export function setVersionstampedKeyHandedOver(tx: Transaction, template: Buffer, offset: number, value: Buffer): void {
  const target = handedOver(tx);
  if (target[SET_STAMPED_KEY_HANDED_OVER] !== undefined) target[SET_STAMPED_KEY_HANDED_OVER](template, offset, value);
  else tx.setVersionstampedKey(template, offset, value);
}
