// A given-up job's error row fits the store whatever its handler threw: a
// long message is cut with a note of how much, and the oldest history
// events go until the row fits.

import test from 'ava';
import { MAX_JOB_DATA_BYTES } from '../../packages/core/src/index.js';
import type { HistoryEventJson } from '../../packages/jobtree/src/processors/interfaces.js';
import { MAX_ERROR_MESSAGE_CHARS, cutErrorText, storedRunError } from '../../packages/jobtree/src/processors/stored-run-error.js';

test('a message within its bound is kept as it is; a longer one is cut and says how much', (t) => {
  t.is(cutErrorText('short', 10), 'short');
  t.is(cutErrorText('abcdefghijkl', 10), 'abcdefghij… (2 more characters cut)');
});

test('a cut does not split a surrogate pair', (t) => {
  const cut = cutErrorText(`${'a'.repeat(9)}😀tail`, 10);
  t.is(cut, `${'a'.repeat(9)}… (6 more characters cut)`);
});

test("a history too large for the store loses its oldest events, the newest kept, and the row fits", (t) => {
  // Control characters take six bytes each once escaped as JSON.
  const reason = '\u0001'.repeat(MAX_ERROR_MESSAGE_CHARS);
  const history: HistoryEventJson[] = Array.from({ length: 40 }, (_, i) => ({ timestamp: new Date(i).toISOString(), type: 'crashed', reason: `${i}${reason}` }));
  const stored = storedRunError('Error', reason, history);
  t.true(Buffer.byteLength(JSON.stringify(stored)) <= MAX_JOB_DATA_BYTES);
  t.true(stored.history.length > 0 && stored.history.length < 40, `${stored.history.length}`);
  t.deepEqual(stored.history, history.slice(0, stored.history.length));
});

test('an error that fits is stored with its whole history', (t) => {
  const history: HistoryEventJson[] = [{ timestamp: new Date(0).toISOString(), type: 'added' }];
  t.deepEqual(storedRunError('BadInput', 'no', history), { message: 'no', name: 'BadInput', history });
});
