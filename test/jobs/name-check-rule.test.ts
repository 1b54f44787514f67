// The quick path of the job type and id checks (an ASCII name
// within its limit is returned without the lone-surrogate test and the
// UTF-8 byte count): every name is accepted or refused, with the same
// error code, as the one rule says: a non-empty string, valid Unicode (no
// lone surrogate), at most the limit in UTF-8 bytes.

import test from 'ava';
import fc from 'fast-check';
import { JobsError, MAX_ID_BYTES, MAX_TYPE_BYTES } from '@jobtree/core';
import type { JobsErrorCode } from '@jobtree/core';
import { checkId, checkType } from '../../packages/core/src/jobs/job-input.js';

/** The rule, written out: what a check must do with `value`. */
function rule(value: unknown, max: number): 'accepted' | 'refused' {
  if (typeof value !== 'string' || value.length === 0) return 'refused';
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return 'refused';
      i++;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      return 'refused';
    }
  }
  return Buffer.byteLength(value, 'utf8') <= max ? 'accepted' : 'refused';
}

function outcome(check: (value: unknown) => string, value: unknown, code: JobsErrorCode): 'accepted' | 'refused' | string {
  try {
    return check(value) === value ? 'accepted' : 'returned another value';
  } catch (error) {
    return JobsError.is(error, code) ? 'refused' : `threw ${String(error)}`;
  }
}

/** Names built near the limits: an ASCII run padded with a few other units. */
function nearLimit(max: number) {
  return fc
    .tuple(
      fc.integer({ min: Math.max(0, max - 6), max: max + 2 }),
      fc.array(fc.constantFrom('a', '\u0000', '\u007f', '\u0080', 'é', '\u07ff', '\u0800', '€', '\uffff', '😀', '\ud800', '\udfff', '\udbff\udc00'), {
        maxLength: 4,
      }),
      fc.nat(),
    )
    .map(([ascii, extra, at]) => {
      const base = 'n'.repeat(ascii);
      const cut = base.length === 0 ? 0 : at % (base.length + 1);
      return base.slice(0, cut) + extra.join('') + base.slice(cut);
    });
}

const anyName = (max: number) =>
  fc.oneof(
    nearLimit(max),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.string({ maxLength: max + 4 }),
    fc.constantFrom('', '\u0000', ' ', 'a\u0000b', '\ud83d', '\ude00', '\ude00\ud83d', '\ud83d\ude00'),
  );

test('a job id is accepted exactly when the rule accepts it, right at the byte limit', (t) => {
  fc.assert(
    fc.property(anyName(MAX_ID_BYTES), (name) => outcome(checkId, name, 'invalid_job_id') === rule(name, MAX_ID_BYTES)),
    { numRuns: 3_000 },
  );
  t.pass();
});

test('a job type is accepted exactly when the rule accepts it, right at the byte limit', (t) => {
  fc.assert(
    fc.property(anyName(MAX_TYPE_BYTES), (name) => outcome(checkType, name, 'invalid_job_type') === rule(name, MAX_TYPE_BYTES)),
    { numRuns: 3_000 },
  );
  t.pass();
});

test('names that are not strings are refused with the name\'s code', (t) => {
  for (const value of [undefined, null, 0, 1n, {}, [], ['a'], new String('a')]) {
    t.is(outcome(checkId, value, 'invalid_job_id'), 'refused');
    t.is(outcome(checkType, value, 'invalid_job_type'), 'refused');
  }
});

test('at the limits: ASCII and multi-byte names one unit either side', (t) => {
  const cases: Array<[string, number, 'accepted' | 'refused']> = [
    ['a'.repeat(MAX_ID_BYTES), MAX_ID_BYTES, 'accepted'],
    ['a'.repeat(MAX_ID_BYTES + 1), MAX_ID_BYTES, 'refused'],
    [`${'a'.repeat(MAX_ID_BYTES - 4)}😀`, MAX_ID_BYTES, 'accepted'],
    [`${'a'.repeat(MAX_ID_BYTES - 3)}😀`, MAX_ID_BYTES, 'refused'],
    [`${'a'.repeat(MAX_ID_BYTES - 1)}\ud800`, MAX_ID_BYTES, 'refused'],
    [`${'a'.repeat(MAX_ID_BYTES - 1)}\u007f`, MAX_ID_BYTES, 'accepted'],
    [`${'a'.repeat(MAX_ID_BYTES - 1)}\u0080`, MAX_ID_BYTES, 'refused'],
  ];
  for (const [name, max, expected] of cases) {
    t.is(rule(name, max), expected, `${name.length} units`);
    t.is(outcome(checkId, name, 'invalid_job_id'), expected, `${name.length} units`);
  }
});
