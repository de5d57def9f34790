/**
 * What a runtime reports, fitted to SPEC.md's closed event schemas before validation: an agent server
 * newer than the schemas (the real OpenHands one adds fields and kinds between releases) must never
 * stall a conversation's log with a 422 for its whole batch. So:
 * - an event of a kind the schemas do not know is dropped (not stored, not served);
 * - a field an event of a known kind has beyond its schema is dropped, and the event kept;
 * - everything else is validated as before: a known field with a wrong value still refuses the batch
 *   (that is a broken runtime, not a newer one).
 * Only the top level of an event is fitted; nested objects keep their own rules (most are open).
 * The caller counts what was dropped (agent_control_ingest_dropped_total).
 */
import { EventSchema } from '../schemas/events';

/** The top-level fields each kind may have. */
const FIELDS: ReadonlyMap<string, ReadonlySet<string>> = new Map(EventSchema.options.map((o) => [o.shape.kind.value as string, new Set(Object.keys(o.shape))]));

export interface Dropped {
  /** Events of unknown kinds, by kind. */
  kinds: Map<string, number>;
  /** Fields beyond the schema, as "Kind.field". */
  fields: Map<string, number>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A kind or field name as it may appear in a log line: bounded, printable. */
const nameOf = (v: string) => v.replace(/[^\w.-]/g, '?').slice(0, 80);

/** The batch with what the schemas do not know taken out; anything that is not a batch of objects with a string kind is left to validation. */
export function fitEvents(raw: unknown): { batch: unknown; dropped: Dropped } {
  // Maps, not objects: a kind named "constructor" or "__proto__" is a name like any other.
  const dropped: Dropped = { kinds: new Map(), fields: new Map() };
  if (!Array.isArray(raw)) return { batch: raw, dropped };
  const batch: unknown[] = [];
  for (const e of raw) {
    if (!isRecord(e) || typeof e.kind !== 'string') {
      batch.push(e);
      continue;
    }
    const fields = FIELDS.get(e.kind);
    if (!fields) {
      const k = nameOf(e.kind);
      dropped.kinds.set(k, (dropped.kinds.get(k) ?? 0) + 1);
      continue;
    }
    const extra = Object.keys(e).filter((f) => !fields.has(f));
    if (extra.length === 0) {
      batch.push(e);
      continue;
    }
    const kept: Record<string, unknown> = {};
    for (const [f, v] of Object.entries(e)) {
      if (fields.has(f)) kept[f] = v;
      else {
        const key = `${e.kind}.${nameOf(f)}`;
        dropped.fields.set(key, (dropped.fields.get(key) ?? 0) + 1);
      }
    }
    batch.push(kept);
  }
  return { batch, dropped };
}

export const droppedAnything = (d: Dropped) => d.kinds.size > 0 || d.fields.size > 0;
