// A Database whose transactions are Proxies that forward every member of
// the real transaction (its internal fast paths too) except `get`,
// which goes through `get` given here: how the jobs tests stand in for a
// wrapper (a tracer, a fault injector) that must see every read, even where
// the embedded engine could answer a read without its public `get`.

import type { Database, Transaction } from '@jobtree/core';

export type InterceptedGet = (tx: Transaction, key: Buffer) => Promise<Buffer | undefined>;

export function interceptGets(database: Database, get: InterceptedGet): Database {
  const wrapTx = (tx: Transaction): Transaction =>
    new Proxy(tx, {
      get(target, property) {
        if (property === 'get') return (key: Buffer) => get(target, key);
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return new Proxy(database, {
    get(target, property) {
      if (property === 'doTransaction') {
        return <T>(body: (tx: Transaction) => Promise<T> | T, options?: unknown) =>
          target.doTransaction((tx) => body(wrapTx(tx)), options as never);
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
