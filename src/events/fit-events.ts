/**
 * What a runtime reports, fitted to SPEC.md's closed event schemas before validation: an agent server
 * newer than the schemas (the real OpenHands one adds fields and kinds between releases) must never
 * stall a conversation's log with a 422 for its whole batch. So:
 * - an event of a kind the schemas do not know is dropped (not stored, not served);
 * - a field an event of a known kind has beyond its schema is dropped, and the event kept;
 * - everything else is validated as before: a known field with a wrong value still refuses the batch
 *   (that is a broken runtime, not a newer one).
 * The top level is fitted before validation (cheap: a key lookup per field). A field added deeper (in a
 * message's content block, say) is found by validation itself: when a batch fails only for keys its
 * closed nested shapes do not know, `fitNestedFields` takes exactly those out and it is validated again.
 * The caller counts what was dropped (agent_control_ingest_dropped_total).
 */
import type { z } from 'zod';
import { EventSchema } from '../schemas/events';

/** The top-level fields each kind may have. */
const FIELDS: ReadonlyMap<string, ReadonlySet<string>> = new Map(
  EventSchema.options.map((o) => [o.shape.kind.value as string, new Set(Object.keys(o.shape))]),
);

export interface Dropped {
  /** Events of unknown kinds, by kind. */
  kinds: Map<string, number>;
  /** Fields beyond the schema, as "Kind.field". */
  fields: Map<string, number>;
}

export const noneDropped = (): Dropped => ({ kinds: new Map(), fields: new Map() });

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A kind or field name as it may appear in a log line: bounded, printable. */
const nameOf = (v: string) => v.replace(/[^\w.-]/g, '?').slice(0, 80);

/** The batch with what the schemas do not know taken out; anything that is not a batch of objects with a string kind is left to validation. */
export function fitEvents(raw: unknown): { batch: unknown; dropped: Dropped } {
  // Maps, not objects: a kind named "constructor" or "__proto__" is a name like any other.
  const dropped = noneDropped();
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

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

/** The deletions that would make `issues` go away, or null when one of them is not an unknown key. */
function removableKeys(issues: readonly Issue[], prefix: Path): [Path, string][] | null {
  const out: [Path, string][] = [];
  for (const issue of issues) {
    const at = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push([at, key]);
    } else if (issue.code === 'invalid_union') {
      // A value that one alternative would take but for keys it does not know; any other case is a real error.
      const fitting = issue.errors.map((branch) => removableKeys(branch, at)).filter((d) => d !== null);
      if (fitting.length !== 1) return null;
      out.push(...fitting[0]!);
    } else {
      return null;
    }
  }
  return out;
}

/**
 * After a failed validation of a batch fitted by `fitEvents`: the batch without the nested fields the
 * issues name as unknown (counted in `dropped.fields` as "Kind.path.field"), or null when any issue is
 * something else (a wrong value: the 422 stands).
 */
export function fitNestedFields(batch: unknown, issues: readonly Issue[], dropped: Dropped): unknown | null {
  const deletions = removableKeys(issues, []);
  if (!deletions || deletions.length === 0 || !Array.isArray(batch)) return null;
  // Every target found first: a batch that cannot be fitted whole is left as it came (its 422 names it).
  const targets: [Path, string, Record<string, unknown>][] = [];
  for (const [at, key] of deletions) {
    let target: unknown = batch;
    for (const step of at)
      target = isRecord(target) || Array.isArray(target) ? (target as Record<PropertyKey, unknown>)[step] : undefined;
    if (!isRecord(target) || !Object.hasOwn(target, key)) return null;
    targets.push([at, key, target]);
  }
  for (const [at, key, target] of targets) {
    delete target[key];
    const kind = (batch[at[0] as number] as { kind?: unknown } | undefined)?.kind;
    const name = `${typeof kind === 'string' ? nameOf(kind) : '?'}.${[...at.slice(1).filter((s) => typeof s === 'string'), key].map((s) => nameOf(String(s))).join('.')}`;
    dropped.fields.set(name, (dropped.fields.get(name) ?? 0) + 1);
  }
  return batch;
}
