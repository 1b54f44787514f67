// The checks of job types and ids: an ASCII name (the quick path) and any
// other name follow one rule, a non-empty valid-Unicode string within a
// UTF-8 byte limit, right at the limits.

import test from 'ava';
import { JobsError, MAX_ID_BYTES, MAX_TYPE_BYTES } from '@jobtree/core';
import { checkId, checkType } from '../../packages/core/src/jobs/job-input.js';

test('an ASCII id or type is accepted up to its byte limit and refused one byte past it', (t) => {
  t.is(checkId('a'.repeat(MAX_ID_BYTES)), 'a'.repeat(MAX_ID_BYTES));
  t.true(JobsError.is(t.throws(() => checkId('a'.repeat(MAX_ID_BYTES + 1))), 'invalid_job_id'));
  t.is(checkType('t'.repeat(MAX_TYPE_BYTES)), 't'.repeat(MAX_TYPE_BYTES));
  t.true(JobsError.is(t.throws(() => checkType('t'.repeat(MAX_TYPE_BYTES + 1))), 'invalid_job_type'));
});

test('ASCII ids with control characters and NUL are valid, as they were', (t) => {
  for (const id of ['\u0000', 'a\u0000b', '\u007f', ' ', 'job-17']) t.is(checkId(id), id);
});

test('a name with non-ASCII characters is measured in UTF-8 bytes and checked for lone surrogates', (t) => {
  // Within the limit in UTF-16 units, past it in UTF-8 bytes.
  t.true(JobsError.is(t.throws(() => checkId(`${'a'.repeat(MAX_ID_BYTES - 1)}é`)), 'invalid_job_id'));
  t.is(checkId(`${'a'.repeat(MAX_ID_BYTES - 2)}é`), `${'a'.repeat(MAX_ID_BYTES - 2)}é`);
  t.true(JobsError.is(t.throws(() => checkId('ok\ud800')), 'invalid_job_id'));
  t.true(JobsError.is(t.throws(() => checkType('\udc00t')), 'invalid_job_type'));
  t.is(checkId('😀'), '😀');
  t.true(JobsError.is(t.throws(() => checkId('')), 'invalid_job_id'));
});
