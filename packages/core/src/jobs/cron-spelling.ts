// One spelling of a cron expression for each of the ways croner lets it be
// written alike: whether a schedule set again keeps its times (and so its
// last tick) must not hang on `@daily` against `0 0 * * *`, a seconds field
// of 0 left out, letter case or spaces. Only rewrites croner makes itself
// are made (its nicknames, its month and day names, its implied seconds):
// two spellings that may tick apart never meet, and `*` or `/` in the time
// fields, which decide how a time runs across DST, are left as written.

/** croner's nicknames, as it expands them. */
const NICKNAMES: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * sun',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/**
 * `cron` in one spelling: lower case, single spaces, nicknames expanded,
 * six fields (seconds first), month and day names as numbers. Expressions
 * with the same spelling tick alike; an expression croner refuses is
 * returned in some spelling all the same.
 */
export function cronSpelling(cron: string): string {
  const text = cron.trim().toLowerCase();
  const fields = (NICKNAMES[text] ?? text).split(/\s+/);
  if (fields.length === 5) fields.unshift('0');
  if (fields.length !== 6) return fields.join(' ');
  fields[4] = namesAsNumbers(fields[4] as string, MONTHS, 1);
  // As croner reads it: Sunday closing a range is 7 (`fri-sun` is 5-7), else 0.
  fields[5] = namesAsNumbers((fields[5] as string).replaceAll('-sun', '-7'), DAYS, 0);
  return fields.join(' ');
}

function namesAsNumbers(field: string, names: readonly string[], first: number): string {
  return field.replace(/[a-z]{3}/g, (name) => {
    const index = names.indexOf(name);
    return index === -1 ? name : String(index + first);
  });
}
