// Which field of a cron expression holds a value out of its range, told as
// the user wrote it. croner refuses such a value with its own zero-based
// count for some fields (a month 13 is "Invalid value for month: 12"): a
// refused expression is read here again, field by field, to say which
// field and which value.

interface FieldRange {
  name: string;
  min: number;
  max: number;
}

const SECOND: FieldRange = { name: 'second', min: 0, max: 59 };
const FIVE_FIELDS: readonly FieldRange[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  // 0 and 7 are both Sunday.
  { name: 'day of week', min: 0, max: 7 },
];

/** What is out of range in `cron` (`month 13 is out of its range 1-12`), or undefined when no field value is. */
export function cronRangeError(cron: string): string | undefined {
  const fields = cron.trim().split(/\s+/);
  const ranges = fields.length === 6 ? [SECOND, ...FIVE_FIELDS] : fields.length === 5 ? FIVE_FIELDS : undefined;
  if (ranges === undefined) return undefined;
  for (let index = 0; index < ranges.length; index++) {
    const range = ranges[index] as FieldRange;
    for (const item of (fields[index] as string).split(',')) {
      for (const value of valuesOf(item)) {
        if (value < range.min || value > range.max) return `${range.name} ${value} is out of its range ${range.min}-${range.max}`;
      }
    }
  }
  return undefined;
}

/**
 * The numbers of one list item that name a time of its field: a value, or
 * both ends of a range, without a step (`/n`), an nth weekday (`#n`) or a
 * last or nearest-weekday mark (`L`, `W`). Names and wildcards have none.
 */
function valuesOf(item: string): number[] {
  const [span = ''] = item.split('/');
  const [start = '', end] = span.split('#')[0]?.replace(/^(\d+)[lw]$/i, '$1').split('-') ?? [];
  return [start, end].filter((part): part is string => part !== undefined && /^\d+$/.test(part)).map(Number);
}
