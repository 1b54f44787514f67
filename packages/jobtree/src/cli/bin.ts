#!/usr/bin/env node
// The `jobtree` executable.

import { runCli } from './program.js';

const code = await runCli(process.argv.slice(2));
// An output that failed while the command ran has set exit code 1 already: keep it.
if (code !== 0 || process.exitCode === undefined) process.exitCode = code;
