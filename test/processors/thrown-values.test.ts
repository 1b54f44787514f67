// A handler may throw anything. What is no Error is stored as text a reader
// can use: its fields, a circular reference shown as such, a Map's
// entries; a huge value is shown in part, and one whose own inspect hook
// throws is still told.

import { inspect } from 'node:util';
import test from 'ava';
import { serializeError } from '../../packages/jobtree/src/processors/lane-protocol.js';

test('a thrown object that refers to itself shows its fields and where it refers back', (t) => {
  const circular: { code: string; self?: unknown } = { code: 'E_LOOP' };
  circular.self = circular;
  t.deepEqual(serializeError(circular), { name: 'Error', message: "<ref *1> { code: 'E_LOOP', self: [Circular *1] }" });
});

test('a thrown Map or class instance shows its entries and its class', (t) => {
  t.is(serializeError(new Map([['status', 503]])).message, "Map(1) { 'status' => 503 }");
  class HttpFailure {
    status = 502;
  }
  t.is(serializeError(new HttpFailure()).message, 'HttpFailure { status: 502 }');
});

test('a huge thrown value is shown in part, deep nesting and long arrays and strings elided', (t) => {
  const huge = { rows: Array.from({ length: 100_000 }, (_, i) => i), body: 'x'.repeat(1_000_000), deep: { a: { b: { c: { d: { e: 1 } } } } } };
  const { message } = serializeError(huge);
  t.true(message.length < 5_000, `${message.length}`);
  t.regex(message, /more items/);
  t.regex(message, /more characters/);
  t.regex(message, /\[Object\]/);
});

test('a thrown value whose own inspect hook throws is still told', (t) => {
  const hostile = {
    [inspect.custom]() {
      throw new Error('no');
    },
    toString: () => 'hostile value',
  };
  t.is(serializeError(hostile).message, 'hostile value');
  t.is(serializeError(Object.assign(Object.create(null), { [inspect.custom]: () => { throw new Error('no'); } })).message, 'a thrown object that cannot be shown');
});

test('a thrown Proxy whose every trap throws, or a revoked one, is still told', (t) => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  t.deepEqual(serializeError(proxy), { name: 'Error', message: '<Revoked Proxy>' });
  const trapsThrow = new Proxy(
    {},
    {
      getPrototypeOf() {
        throw new Error('no prototype');
      },
      get() {
        throw new Error('no property');
      },
    },
  );
  t.is(serializeError(trapsThrow).name, 'Error');
});

test('a thrown Error whose message getter throws is still told', (t) => {
  const error = new Error('unread');
  Object.defineProperty(error, 'message', {
    get() {
      throw new Error('no message');
    },
  });
  t.deepEqual(serializeError(error), { name: 'Error', message: 'a thrown object that cannot be shown' });
});
