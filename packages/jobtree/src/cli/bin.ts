#!/usr/bin/env node
// The `jobtree` executable.

import { runCli } from './program.js';

process.exitCode = await runCli(process.argv.slice(2));
