// Host threads import `.ts` actor modules, so they need the tsx loader. A
// Worker inherits the parent's execArgv, but a bare `--import tsx` resolves
// against the process cwd, which may have changed (or tsx may have been
// registered programmatically and be absent from execArgv): rewrite it to the
// loader's absolute URL, or add it.

import { Worker } from 'node:worker_threads';

const LOADER_FLAGS = new Set(['--import', '--loader', '--experimental-loader', '--require', '-r']);
const BARE_TSX = /^tsx(\/esm|\/cjs)?$/;

/**
 * The execArgv for host threads, or undefined to let Node's default
 * inheritance apply unchanged (some flags are not allowed in a Worker when
 * passed explicitly).
 */
export function workerExecArgv(
  parentArgv: readonly string[] = process.execArgv,
  resolveTsx: () => string | undefined = defaultTsxUrl,
  needsLoader: boolean = import.meta.url.endsWith('.ts'),
): string[] | undefined {
  const argv = [...parentArgv];
  let hasTsx = false;
  let rewritten = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (!LOADER_FLAGS.has(flag)) continue;
    const valueAt = eq > 0 ? i : i + 1;
    const value = eq > 0 ? arg.slice(eq + 1) : argv[i + 1];
    if (value === undefined || !value.includes('tsx')) continue;
    hasTsx = true;
    if (BARE_TSX.test(value)) {
      const url = resolveTsx();
      if (url !== undefined) {
        argv[valueAt] = eq > 0 ? `${flag}=${url}` : url;
        rewritten = true;
      }
    }
    if (eq < 0) i++;
  }
  if (!hasTsx && needsLoader) {
    const url = resolveTsx();
    if (url !== undefined) {
      argv.push(`--import=${url}`);
      rewritten = true;
    }
  }
  return rewritten ? argv : undefined;
}

let checkedHostArgv: { argv: string[] | undefined } | undefined;

/**
 * workerExecArgv(), when a Worker accepts those flags given explicitly; else
 * undefined. Inherited flags are filtered by Node, explicit ones must all be
 * valid in a Worker (`--expose-gc` and other V8 or process-wide flags are
 * not): then the threads inherit the flags as they are and thread-entry.mjs
 * registers tsx itself. The flags besides the loader's are checked once, on
 * a Worker ended at once.
 */
export function hostExecArgv(): string[] | undefined {
  if (checkedHostArgv !== undefined) return checkedHostArgv.argv;
  let argv = workerExecArgv();
  const others = argv === undefined ? [] : (execArgvWithoutTsx(argv) ?? argv);
  if (others.length > 0 && !workerTakesExecArgv(others)) argv = undefined;
  checkedHostArgv = { argv };
  return argv;
}

/**
 * Whether a Worker accepts `argv` given explicitly (every flag must be
 * valid in a Worker; inherited ones Node filters instead), tried on a
 * Worker ended at once.
 */
export function workerTakesExecArgv(argv: readonly string[]): boolean {
  try {
    void new Worker('', { eval: true, execArgv: [...argv] }).terminate();
    return true;
  } catch {
    return false;
  }
}

function defaultTsxUrl(): string | undefined {
  try {
    return import.meta.resolve('tsx');
  } catch {
    return undefined;
  }
}

/**
 * The parent's execArgv without its tsx loader flags (`--import tsx` and
 * the like), for threads that run built JavaScript only; undefined when
 * there is none to drop (Node's default inheritance then applies).
 */
export function execArgvWithoutTsx(parentArgv: readonly string[] = process.execArgv): string[] | undefined {
  const argv: string[] = [];
  let dropped = false;
  for (let i = 0; i < parentArgv.length; i++) {
    const arg = parentArgv[i] as string;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (LOADER_FLAGS.has(flag)) {
      const value = eq > 0 ? arg.slice(eq + 1) : parentArgv[i + 1];
      if (value?.includes('tsx')) {
        dropped = true;
        if (eq < 0) i++;
        continue;
      }
    }
    argv.push(arg);
  }
  return dropped ? argv : undefined;
}
