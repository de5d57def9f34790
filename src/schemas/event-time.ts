/**
 * Event times as sortable keys. Events arrive with ISO 8601 timestamps, often with microseconds (the
 * Python runtimes), sometimes without a zone (the OpenHands agent server's). The log keeps an RFC 3339
 * timestamp as sent, any other as its UTC key (`eventTimeAsSent`), and, for queries, a UTC key
 * `YYYY-MM-DDTHH:MM:SS.ffffffZ` whose string order is time order, with no precision lost to a Date.
 * A timestamp without a zone is read as UTC.
 */
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

export function normalizeEventTime(text: string): string | null {
  const m = ISO.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone] = m;
  const fields = [Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)] as const;
  // Date.UTC reads years 0..99 as 1900..1999; setUTCFullYear takes them as written (Python's datetime.min is 0001).
  const at = new Date(0);
  at.setUTCFullYear(fields[0], fields[1], fields[2]);
  at.setUTCHours(fields[3], fields[4], fields[5], 0);
  const local = at.getTime();
  const check = new Date(local);
  if (
    check.getUTCFullYear() !== fields[0] ||
    check.getUTCMonth() !== fields[1] ||
    check.getUTCDate() !== fields[2] ||
    check.getUTCHours() !== fields[3] ||
    check.getUTCMinutes() !== fields[4] ||
    check.getUTCSeconds() !== fields[5] ||
    fields[0] < 1
  ) {
    return null;
  }
  let offsetMinutes = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2) || '0');
    if (oh > 23 || om > 59) return null;
    offsetMinutes = sign * (oh * 60 + om);
  }
  const utc = new Date(local - offsetMinutes * 60_000);
  if (utc.getUTCFullYear() < 1 || utc.getUTCFullYear() > 9999) return null;
  const micros = (frac + '000000').slice(0, 6);
  return utc.toISOString().replace(/\.\d{3}Z$/, `.${micros}Z`);
}

/** RFC 3339's date-time (what the OpenAPI document's `format: date-time` means): a zone always. */
const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * The timestamp an event keeps: the text as sent when it is an RFC 3339 date-time, else (no zone, a
 * space for the T, a date alone) its UTC key, so that every answer is a date-time a client can read
 * without guessing a zone. Null when `text` is no time at all.
 */
export function eventTimeAsSent(text: string): string | null {
  const key = normalizeEventTime(text);
  return key !== null && RFC_3339.test(text) ? text : key;
}
