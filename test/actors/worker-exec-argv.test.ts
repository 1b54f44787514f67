import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import test from 'ava';
import { execArgvWithoutTsx, workerExecArgv } from '../../packages/actors/src/worker-exec-argv.js';

const run = promisify(execFile);
const TSX = 'file:///deps/tsx/dist/loader.mjs';
const resolveTsx = () => TSX;

test('a bare --import tsx is rewritten to the loader URL, in both flag forms', (t) => {
  t.deepEqual(workerExecArgv(['--import', 'tsx'], resolveTsx, true), ['--import', TSX]);
  t.deepEqual(workerExecArgv(['--import=tsx', '--no-warnings'], resolveTsx, true), [`--import=${TSX}`, '--no-warnings']);
});

test('absolute tsx flags are kept as they are (Node inherits them)', (t) => {
  t.is(workerExecArgv(['--require', '/x/tsx/dist/preflight.cjs', '--import', TSX], resolveTsx, true), undefined);
});

test('without any tsx flag, the loader is added only when running TypeScript', (t) => {
  t.deepEqual(workerExecArgv([], resolveTsx, true), [`--import=${TSX}`]);
  t.is(workerExecArgv([], resolveTsx, false), undefined);
  t.is(workerExecArgv([], () => undefined, true), undefined);
});

test('threads of built JavaScript drop every tsx loader flag, in both flag forms, and keep the others', (t) => {
  t.deepEqual(
    execArgvWithoutTsx(['--require', '/x/tsx/dist/preflight.cjs', '--import', TSX, '--no-warnings', '--import=tsx', '--enable-source-maps']),
    ['--no-warnings', '--enable-source-maps'],
  );
  t.deepEqual(execArgvWithoutTsx(['--import', 'tsx', '--import', 'file:///app/otel.mjs']), ['--import', 'file:///app/otel.mjs']);
  t.is(execArgvWithoutTsx(['--no-warnings']), undefined, 'nothing to drop: Node inherits the flags as they are');
});

const script = fileURLToPath(new URL('./fixtures/spawn-and-echo.ts', import.meta.url));
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));

test('host threads load .ts actors when the parent ran `node --import tsx` from another cwd', async (t) => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', script], { cwd: fixtures, timeout: 60_000 });
  t.regex(stdout, /echo from .*fixtures/);
});

test('host threads load .ts actors when the parent registered tsx through its API (no execArgv)', async (t) => {
  const entry = fileURLToPath(new URL('./fixtures/register-tsx-then-run.mjs', import.meta.url));
  const { stdout } = await run(process.execPath, [entry, script], { cwd: root, timeout: 60_000 });
  t.regex(stdout, /echo from/);
});

test('host threads start when the parent ran `node --expose-gc --import tsx` (a flag a Worker refuses when given explicitly)', async (t) => {
  const { stdout } = await run(process.execPath, ['--expose-gc', '--import', 'tsx', script], { cwd: fixtures, timeout: 60_000 });
  t.regex(stdout, /echo from .*fixtures/);
});
