// The part of fs-native-extensions (a CommonJS package without typings) that
// the directory lock uses.

declare module 'fs-native-extensions' {
  /**
   * Takes an advisory lock on an open file without waiting (the whole file
   * by default; exclusive unless `shared`). True when taken, false when
   * another open file holds a conflicting lock. The kernel releases it when
   * the descriptor is closed or its process exits.
   */
  export function tryLock(fd: number, offset?: number, length?: number, options?: { shared?: boolean }): boolean;
  /** Releases a lock taken on `fd`. */
  export function unlock(fd: number, offset?: number, length?: number): void;
}
