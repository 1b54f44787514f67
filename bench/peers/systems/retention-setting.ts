// `--retention`: jobtree's variants run twice a round, with retention on
// and off, so that what retention costs the drain is read as a ratio of the
// same run. On is what a user gets by default: an app started by
// `startJobs` without a `retention` option (the pruner under the jobs tree,
// its default policy, interval and pace). Off is `startJobs({ retention:
// false })`: no pruner. The finish log, which the pruner reads, is written
// by the store in both. The LocalQueue variants open their store with
// `openJobs`, which has no pruner at all; under `--retention` they open it
// as an app does (`startJobs`, the LocalQueue over `app.jobs`), so that on
// and off differ for them as for `app.process`.

export const RETENTION_SETTINGS = ['on', 'off'] as const;
export type RetentionSetting = (typeof RETENTION_SETTINGS)[number];

/** The settings in the order a round runs them: alternating between rounds, so that neither always runs first. */
export function settingsOfRound(round: number): RetentionSetting[] {
  return round % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
}

/** `startJobs`' option for a setting: none for on (the defaults), `retention: false` for off. */
export function retentionOption(setting: RetentionSetting | undefined): { retention?: false } {
  return setting === 'off' ? { retention: false } : {};
}
