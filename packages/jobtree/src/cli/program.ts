// The `jobtree` command line: commander's parser, one subcommand per
// operation, `--json` on every one, exit codes 0 (ok), 1 (failure) and
// 2 (bad usage), and a one-line error on stderr.

import type { AddOptions, JobOutcome, JobState, JsonValue, TypeLimits } from '@jobtree/core';
import { Command, CommanderError, Option } from 'commander';
import type { Backend } from './backend.js';
import { CliError } from './cli-error.js';
import { type TargetOptions, connect } from './connect.js';
import { runDemo } from './demo.js';
import { formatFlow, formatJob, formatJobs, formatKill, formatScheduler, formatSchedules, formatStatus, formatTypes, printable, printableLines } from './output.js';
import { openUrl } from './open-url.js';

/** Where the command writes; tests pass their own. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Resolves on Ctrl-C (for `demo`). */
  interrupted?: Promise<void>;
}

interface CommonOptions extends TargetOptions {
  json?: boolean;
}

const EXAMPLES = `
Where: --path DIR is an app's data directory (its running app is found through the
admin.json it records there; with no app running the store is opened directly),
--url URL an app's admin endpoint. JOBTREE_PATH sets the default --path.
The token for changes comes from --token-file FILE, JOBTREE_TOKEN or
JOBTREE_TOKEN_FILE, else the data directory's admin.token (--token works too,
but shows it to every user of the machine in the process list).

Examples:
  $ jobtree status --path ./.data/app          the supervision tree, restarts, uptimes, queues
  $ jobtree jobs email --state pending --path ./.data/app
  $ jobtree job email welcome-42 --json --path ./.data/app
  $ jobtree jobs email --failed --path ./.data/app       the jobs given up, with their errors
  $ jobtree flow report q2 --path ./.data/app            a flow's tree: each job's state and outcome
  $ jobtree retry email welcome-42 --path ./.data/app    run a failed or cancelled job again
  $ jobtree set-timeout email 30 --path ./.data/app
  $ jobtree pause email --path ./.data/app              no new email job starts anywhere until resume
  $ jobtree schedules --path ./.data/app                 recurring jobs with their last and next ticks
  $ jobtree add email welcome-43 '{"to":"ada@example.com"}' --priority 5 --path ./.data/app
  $ jobtree kill notifier:email --path ./.data/app      fault injection: watch it restart
  $ jobtree dashboard --open --path ./.data/app
  $ jobtree demo --kill-every 10                         a live app to look at`;

const STATES = ['waiting', 'pending', 'running', 'finished'];
const OUTCOMES = ['succeeded', 'failed', 'cancelled'];
/** The app's root supervisor: killing it stops the app, so `kill` wants --force for it. */
const ROOT = 'jobs_sup';

/** Runs the command line; resolves with the exit code (it never calls process.exit). */
export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const program = buildProgram(io);
  if (argv.length === 0) {
    io.err(program.helpInformation());
    return 2;
  }
  // commander answers `help <unknown>` with the whole help and exit 0, which hides the typo.
  const [first, asked] = argv;
  if (first === 'help' && asked !== undefined && asked !== 'help' && !program.commands.some((each) => each.name() === asked)) {
    io.err(`jobtree: unknown command '${printable(asked)}' (see jobtree --help)\n`);
    return 2;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return 0;
      io.err(`jobtree: ${error.message.replace(/^error: /, '')} (see jobtree --help)\n`);
      return 2;
    }
    if (error instanceof CliError) {
      io.err(`jobtree: ${oneLine(error.message)}${error.code === 'usage' ? ' (see jobtree --help)' : ''}\n`);
      return error.exitCode;
    }
    io.err(`jobtree: ${oneLine(error instanceof Error ? error.message : String(error))}\n`);
    return 1;
  }
}

function buildProgram(io: CliIo): Command {
  const program = new Command('jobtree')
    .description('Look at and operate a jobtree app: its supervision tree, queues, jobs and scheduler.')
    .version('0.1.0')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text), outputError: () => {} })
    .addHelpText('after', EXAMPLES)
    .showSuggestionAfterError(true);

  const command = (name: string, description: string) => {
    const sub = program
      .command(name)
      .description(description)
      .option('--path <dir>', "the app's data directory")
      .option('--url <url>', "the app's admin endpoint, e.g. http://127.0.0.1:7070")
      .option('--token <token>', 'the token for changes (default: read from the data directory); every user of the machine can read it in the process list: prefer --token-file or JOBTREE_TOKEN')
      .option('--token-file <file>', 'read the token for changes from this file (like JOBTREE_TOKEN_FILE)')
      .option('--json', 'print JSON instead of text')
      .exitOverride()
      .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text), outputError: () => {} });
    return sub;
  };

  /** Runs `work` against the backend and prints its JSON or text. */
  const run = async (options: CommonOptions, needsApp: boolean, work: (backend: Backend) => Promise<{ json: unknown; text: string }>) => {
    const backend = await connect(options, needsApp);
    try {
      const { json, text } = await work(backend);
      // Each format escapes what it prints from jobs; this pass covers any line that did not.
      io.out(options.json ? `${JSON.stringify(json, null, 2)}\n` : `${printableLines(text)}\n`);
    } finally {
      await backend.close();
    }
  };

  command('status', 'the supervision tree (restarts, uptimes, threads) and the queues')
    .addHelpText('after', '\nWith no app running, only the queues (read from the store).')
    .action((options: CommonOptions) =>
      run(options, false, async (backend) => {
        const status = await backend.status();
        const { types } = await backend.types();
        return { json: { ...status, types }, text: formatStatus(status, types) };
      }),
    );

  command('types', 'job types: timeout, paused, jobs per state, totals since the app started').action((options: CommonOptions) =>
    run(options, false, async (backend) => {
      // The shape of GET /api/types, so that a script reads either the same way.
      const view = await backend.types();
      return { json: view, text: view.types.length === 0 ? 'no job types' : formatTypes(view.types) };
    }),
  );

  command('jobs', 'the jobs of a type')
    .argument('<type>')
    .addOption(new Option('--state <state>', 'only jobs in this state').choices(STATES))
    .addOption(new Option('--outcome <outcome>', 'only finished jobs that ended so').choices(OUTCOMES))
    .option('--failed', 'only the jobs given up (--outcome failed)')
    .option('--limit <n>', 'at most this many', '100')
    .option('--offset <n>', 'skip this many first (the next page: --offset 100)', '0')
    .action((type: string, options: CommonOptions & { state?: JobState; outcome?: JobOutcome; failed?: boolean; limit: string; offset: string }) => {
      const outcome = outcomeOption(options);
      const limit = integer(options.limit, '--limit', 1);
      const offset = integer(options.offset, '--offset', 0);
      return run(options, false, async (backend) => {
        const view = await backend.jobs(type, options.state, limit, outcome, offset);
        return { json: view, text: formatJobs(view) };
      });
    });

  command('job', 'one job: state, data, outcome (result or error, attempts), and its history')
    .argument('<type>')
    .argument('<id>')
    .action((type: string, id: string, options: CommonOptions) =>
      run(options, false, async (backend) => {
        const job = await backend.job(type, id);
        return { json: job, text: formatJob(job) };
      }),
    );

  command('flow', 'the flow under a job as a tree: each job with its state and outcome, each parent with its policy')
    .argument('<type>')
    .argument('<id>')
    .action((type: string, id: string, options: CommonOptions) =>
      run(options, false, async (backend) => {
        // The shape of GET /api/flows/:type/:id.
        const flow = await backend.flow(type, id);
        return { json: flow, text: formatFlow(flow) };
      }),
    );

  command('add', 'add a job (the type needs a timeout: set-timeout)')
    .argument('<type>')
    .argument('<id>')
    .argument('[data]', 'the job data as JSON', 'null')
    .option('--priority <n>', 'an integer >= 0; higher runs first')
    .option('--at <time>', 'not before this time: epoch seconds or an ISO 8601 date')
    .option('--continuous', 'a job that runs until stopped (a scheduler may rotate it)')
    .action((type: string, id: string, data: string, options: CommonOptions & { priority?: string; at?: string; continuous?: boolean }) => {
      // Read before the store is looked for: bad usage exits 2 whatever is at --path.
      const value = json(data);
      const addOptions: AddOptions = {};
      if (options.priority !== undefined) addOptions.priority = integer(options.priority, '--priority', 0);
      if (options.at !== undefined) addOptions.scheduledTime = epochSeconds(options.at);
      if (options.continuous) addOptions.continuous = true;
      return run(options, false, async (backend) => {
        const result = await backend.add(type, id, value, addOptions);
        return { json: result, text: `${type} / ${id}: ${result.state}` };
      });
    });

  command('remove', 'remove a job (a running one is cancelled: its worker gets halt)')
    .argument('<type>')
    .argument('<id>')
    .action((type: string, id: string, options: CommonOptions) =>
      run(options, false, async (backend) => {
        const result = await backend.remove(type, id);
        return { json: result, text: `${type} / ${id}: removed` };
      }),
    );

  command('retry', 'run a failed or cancelled job again with its input (any other job: not_retryable)')
    .argument('<type>')
    .argument('<id>')
    .action((type: string, id: string, options: CommonOptions) =>
      run(options, false, async (backend) => {
        const result = await backend.retry(type, id);
        return { json: result, text: `${type} / ${id}: pending (runs again)` };
      }),
    );

  command('cancel', 'end a pending or running job as cancelled (its input kept: retry runs it again)')
    .argument('<type>')
    .argument('<id>')
    .action((type: string, id: string, options: CommonOptions) =>
      run(options, false, async (backend) => {
        const result = await backend.cancel(type, id);
        return { json: result, text: `${type} / ${id}: ${result.cancelled ? 'cancelled' : 'had ended already, left as it was'}` };
      }),
    );

  command('set-timeout', "set (or with --clear, remove) a type's activity timeout")
    .argument('<type>')
    .argument('[seconds]', 'a worker must report at least this often')
    .option('--clear', 'remove the timeout (the type stops accepting adds)')
    .action((type: string, seconds: string | undefined, options: CommonOptions & { clear?: boolean }) => {
      // Read before the store is looked for, as add's arguments are.
      if (options.clear === true && seconds !== undefined) throw new CliError('usage', 'give seconds or --clear, not both');
      if (options.clear !== true && seconds === undefined) throw new CliError('usage', 'set-timeout needs seconds (or --clear)');
      const value = seconds === undefined ? undefined : number(seconds, 'seconds', 0);
      return run(options, false, async (backend) => {
        const result = await backend.setTimeout(type, value);
        return { json: result, text: result.timeout === null ? `${type}: no timeout` : `${type}: timeout ${result.timeout}s` };
      });
    });

  command('limits', "a type's limits: concurrency and rate, for the type and per group (set them with app.setLimits)")
    .argument('<type>')
    .action((type: string, options: CommonOptions) =>
      run(options, false, async (backend) => {
        const result = await backend.limits(type);
        return { json: result, text: `${type}: ${describeLimits(result.limits)}` };
      }),
    );

  command('schedules', 'the schedules (recurring jobs): when, the job type, the backfill policy, the last and next ticks').action((options: CommonOptions) =>
    run(options, false, async (backend) => {
      // The shape of GET /api/schedules, so that a script reads either the same way.
      const view = await backend.schedules();
      return { json: view, text: formatSchedules(view) };
    }),
  );

  for (const [name, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    command(name, paused ? 'pause a type: no process starts its jobs until resumed (running ones finish, adds go on)' : 'resume a paused type: its backlog starts at once')
      .argument('<type>')
      .action((type: string, options: CommonOptions) =>
        run(options, false, async (backend) => {
          const result = await backend.setPaused(type, paused);
          return { json: result, text: `${type}: ${result.paused ? 'paused' : 'resumed'}` };
        }),
      );
  }

  command('scheduler', "the scheduler's stats and jobs (like CouchDB's _scheduler/jobs); needs a running app").action((options: CommonOptions) =>
    run(options, true, async (backend) => {
      const report = await backend.scheduler();
      return { json: report, text: formatScheduler(report) };
    }),
  );

  command('kill', 'kill an actor by name (fault injection); prints what replaced it; needs a running app')
    .argument('<actor>', 'a registered name: core, notifier_sup, notifier:<type>, activity_monitor:<type>, …')
    .option('--force', `needed to kill ${ROOT}: that stops the whole app`)
    .addHelpText('after', `\nKilling ${ROOT}, the root supervisor, stops the app for good (nothing restarts it; with\nonRootExit 'exit' its process exits): it is refused without --force.`)
    .action(async (name: string, options: CommonOptions & { force?: boolean }) => {
      if (name === ROOT && options.force !== true) {
        throw new CliError('usage', `killing ${ROOT} stops the whole app (its calls fail with app_stopped, nothing restarts it): add --force to do it`);
      }
      await run(options, true, async (backend) => {
        if (!options.json) io.err(name === ROOT ? `killing ${ROOT}: the app stops…\n` : `killing ${name} and waiting for its replacement…\n`);
        const report = await backend.kill(name);
        return { json: report, text: name === ROOT ? `killed ${ROOT} (${report.killed}); the app stopped` : formatKill(report) };
      });
    });

  command('dashboard', "print (or --open) the dashboard's URL, with the token; needs a running app")
    .option('--open', 'open it in the desktop browser, signed in by a single-use code (the token stays out of the browser command line)')
    .action((options: CommonOptions & { open?: boolean }) =>
      run(options, true, async (backend) => {
        const url = backend.dashboardUrl();
        // The opener's arguments are public (ps): it gets a code that works once, for 60 s, not the token.
        const opened = options.open === true ? await openUrl(await backend.dashboardOpenUrl()) : false;
        if (opened) {
          const plain = url.replace(/#.*$/, '');
          return { json: { url: plain, opened }, text: `${plain} (opened in the browser)` };
        }
        const note = options.open === true ? '\n(no browser could be started here: open the URL yourself)' : '';
        return { json: { url, opened }, text: url + note };
      }),
    );

  program
    .command('demo')
    .description('run a demo app with its admin endpoint until Ctrl-C (or --seconds): jobs flowing, a dashboard to open')
    .option('--path <dir>', 'keep its data here (default: a temporary directory, removed at the end)')
    .option('--port <n>', 'admin endpoint port (0: any free one)', '0')
    .option('--seconds <n>', 'stop after this many seconds')
    .option('--workers <n>', 'main-thread workers taking jobs', '3')
    .option('--kill-every <seconds>', 'kill a notifier, an activity monitor or notifier_sup this often (at least 3.5 s apart: jobs_sup allows 3 restarts in 10 s)')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text), outputError: () => {} })
    .action(async (options: { path?: string; port: string; seconds?: string; workers: string; killEvery?: string }) => {
      await runDemo({
        path: options.path,
        port: integer(options.port, '--port', 0),
        seconds: options.seconds === undefined ? undefined : number(options.seconds, '--seconds', 0),
        killEvery: options.killEvery === undefined ? undefined : number(options.killEvery, '--kill-every', 0.1),
        workers: integer(options.workers, '--workers', 1),
        log: (line) => io.out(`${line}\n`),
        stopSignal: io.interrupted ?? new Promise<void>(() => {}),
      });
    });

  return program;
}

function processIo(): CliIo {
  const err = closableStream(process.stderr, () => {
    process.exitCode = 1;
  });
  const out = closableStream(process.stdout, (error) => {
    process.exitCode = 1;
    err(`jobtree: cannot write the output: ${describeWriteError(error)}\n`);
  });
  return {
    out,
    err,
    interrupted: new Promise<void>((resolve) => process.once('SIGINT', () => resolve())),
  };
}

/**
 * Writes to `stream` until its reader goes away or a write fails. A reader
 * that closes early (`jobtree jobs … | head`) has taken what it wanted: the
 * rest of the output is dropped and the command ends as it would have,
 * instead of dying on the pipe's EPIPE with a stack trace. Any other
 * failure (ENOSPC on a full disk, EIO) is the command's failure: `failed`
 * reports it once, in one line, and the command exits 1.
 */
function closableStream(stream: NodeJS.WriteStream, failed: (error: NodeJS.ErrnoException) => void): (text: string) => void {
  // One writer per stream, so that a library calling runCli again adds no listener.
  const known = streamWriters.get(stream);
  if (known !== undefined) return known;
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (closed) return;
    closed = true;
    // A write already queued when the reader left fails as ERR_STREAM_DESTROYED.
    if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') failed(error);
  });
  const write = (text: string) => {
    if (!closed) stream.write(text);
  };
  streamWriters.set(stream, write);
  return write;
}

/** `ENOSPC (no space left on device)`: the code, and the reason without the system call. */
function describeWriteError(error: NodeJS.ErrnoException): string {
  const reason = error.message.replace(/^[A-Z]+: /, '').replace(/, \w+$/, '');
  return error.code === undefined ? reason : `${error.code} (${reason})`;
}

const streamWriters = new WeakMap<NodeJS.WriteStream, (text: string) => void>();

/** `--failed` is `--outcome failed`; an outcome belongs to finished jobs only. */
function outcomeOption(options: { state?: JobState; outcome?: JobOutcome; failed?: boolean }): JobOutcome | undefined {
  if (options.failed && options.outcome !== undefined && options.outcome !== 'failed') throw new CliError('usage', `--failed and --outcome ${options.outcome} ask for different jobs`);
  const outcome = options.failed ? 'failed' : options.outcome;
  if (outcome !== undefined && options.state !== undefined && options.state !== 'finished') {
    throw new CliError('usage', `only finished jobs have an outcome, got --state ${options.state}`);
  }
  return outcome;
}

function json(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw new CliError('usage', `data is JSON, got ${JSON.stringify(text)} (quote strings: '"text"')`);
  }
}

function number(text: string, name: string, least: number): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < least) throw new CliError('usage', `${name} is a number >= ${least}, got ${JSON.stringify(text)}`);
  return value;
}

function integer(text: string, name: string, least: number): number {
  const value = number(text, name, least);
  if (!Number.isSafeInteger(value)) throw new CliError('usage', `${name} is an integer >= ${least}, got ${JSON.stringify(text)}`);
  return value;
}

function epochSeconds(text: string): number {
  if (/^\d+(\.\d+)?$/.test(text)) return Math.floor(Number(text));
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new CliError('usage', `--at is epoch seconds or an ISO 8601 date, got ${JSON.stringify(text)}`);
  return Math.floor(ms / 1000);
}

function oneLine(text: string): string {
  return printable(text.split('\n')[0] ?? text);
}

function describeLimits(limits: TypeLimits | null): string {
  if (limits === null) return 'no limits';
  const parts: string[] = [];
  if (limits.concurrency !== undefined) parts.push(`concurrency ${limits.concurrency}`);
  if (limits.rate !== undefined) parts.push(`rate ${limits.rate.max} per ${limits.rate.perMs} ms`);
  const group = limits.group;
  if (group?.concurrency !== undefined) parts.push(`per group: concurrency ${group.concurrency}`);
  if (group?.rate !== undefined) parts.push(`per group: rate ${group.rate.max} per ${group.rate.perMs} ms`);
  return parts.join(', ');
}
