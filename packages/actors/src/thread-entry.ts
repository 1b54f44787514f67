// How a thread is started on thread-entry.mjs: which file it runs, and what
// its `workerData.entry` must hold so that it loads `module` (tsx registered
// first when the module is TypeScript).

const RUNNING_TYPESCRIPT = import.meta.url.endsWith('.ts');

/** The file every thread starts with (see thread-entry.mjs). */
export const THREAD_ENTRY = new URL('./thread-entry.mjs', import.meta.url);

/** What thread-entry.mjs reads from `workerData.entry`. */
export interface ThreadEntryData {
  /** tsx's register API, when the thread may load TypeScript. */
  tsxApi: string | undefined;
  /** The module the thread runs (its default export is the thread's). */
  module: string;
}

/**
 * tsx's register API when this code runs from TypeScript sources, or built
 * but in an app run under tsx (whose actor or handler modules may then be
 * TypeScript); undefined otherwise.
 */
const TSX_API =
  RUNNING_TYPESCRIPT || process.execArgv.some((arg) => arg.includes('tsx')) ? resolveOrUndefined('tsx/esm/api') : undefined;

function resolveOrUndefined(specifier: string): string | undefined {
  try {
    return import.meta.resolve(specifier);
  } catch {
    return undefined;
  }
}

/**
 * The entry data of a thread that runs `name` from the folder of `base`: the
 * `.ts` file when `base` is TypeScript, else the built `.js` one.
 * @example threadEntry(import.meta.url, './host-thread')
 */
export function threadEntry(base: string, name: string): ThreadEntryData {
  const typescript = base.endsWith('.ts');
  return { tsxApi: TSX_API, module: new URL(`${name}${typescript ? '.ts' : '.js'}`, base).href };
}
