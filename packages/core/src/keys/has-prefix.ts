// Whether a key starts with a prefix, compared byte by byte in JavaScript.
// Hot paths test every queue entry they read against a type's or a rank's
// prefix (a few dozen bytes): `Buffer#compare` with offsets is a call into
// C++ that cost more than the rest of decoding the entry, and
// `prefix.equals(key.subarray(…))` allocated a view per test.

/** Whether `key` starts with `prefix`. */
export function hasPrefix(key: Uint8Array, prefix: Uint8Array): boolean {
  if (key.length < prefix.length) return false;
  // From the end: keys of one subspace share their first bytes and differ late.
  for (let i = prefix.length - 1; i >= 0; i--) if (key[i] !== prefix[i]) return false;
  return true;
}
