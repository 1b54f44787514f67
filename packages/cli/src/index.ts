// The public surface of @jobtree/cli: the command line as a function (for
// embedding and tests) and its backends.
export { runCli, type CliIo } from './program.js';
export { CliError, type CliErrorCode } from './cli-error.js';
export { connect, type TargetOptions } from './connect.js';
export type { Backend, JobView, JobsView, KillReport, SchedulerReport, StatusView, TypeView, TypesView } from './backend.js';
