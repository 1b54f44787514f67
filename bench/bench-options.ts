// A benchmark's command line. `--help` (or `-h`) prints the benchmark's
// usage and exits 0; an option it does not take, or a value node's
// parseArgs refuses, prints why and the usage on stderr and exits 2. A
// benchmark runs for minutes: a misspelt flag must stop it at once, not
// let it run with the defaults, and asking for help must not be a stack
// trace.

import { type ParseArgsConfig, parseArgs } from 'node:util';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** Prints `message` and the usage on stderr and exits 2, the exit code of a bad command line. */
export function badOption(usage: string, message: string): never {
  process.stderr.write(`${message}\n\n${usage}\n`);
  process.exit(2);
}

/** The values of `options` on this process's command line (strict: no positionals, no unknown options). */
export function benchOptions<const T extends OptionsConfig>(usage: string, options: T) {
  const words = process.argv.slice(2);
  if (words.includes('--help') || words.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  try {
    return parseArgs({ options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) badOption(usage, (error as Error).message);
    throw error;
  }
}

/** A positive integer given as option `name` (e.g. `--rounds`), or a bad option. */
export function positiveInteger(usage: string, name: string, text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) badOption(usage, `${name} must be a positive integer, got ${text}`);
  return value;
}

/** A positive finite number given as option `name` (e.g. `--seconds`), or a bad option. */
export function positiveNumber(usage: string, name: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) badOption(usage, `${name} must be a positive number, got ${text}`);
  return value;
}
