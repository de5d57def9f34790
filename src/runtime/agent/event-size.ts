/**
 * Keeps each event small enough to travel: the api refuses request bodies over MAX_BODY_BYTES (5 MiB by
 * default), and an event it refuses for good would leave a gap in the log. The longest strings of an
 * oversized event (a huge command output, whole file contents, a long completion log) are cut, with a
 * note saying how much was left out, until the event fits.
 */

/** Largest serialized event the runtime emits. */
export const MAX_EVENT_BYTES = 1024 * 1024;

interface StringLeaf {
  holder: Record<string, unknown> | unknown[];
  key: string | number;
  value: string;
}

function longestString(value: unknown): StringLeaf | null {
  let best: StringLeaf | null = null;
  const walk = (holder: Record<string, unknown> | unknown[]) => {
    for (const [k, v] of Object.entries(holder)) {
      const key = Array.isArray(holder) ? Number(k) : k;
      if (typeof v === 'string') {
        if (!best || v.length > best.value.length) best = { holder, key, value: v };
      } else if (v && typeof v === 'object') walk(v as Record<string, unknown>);
    }
  };
  if (value && typeof value === 'object') walk(value as Record<string, unknown>);
  return best;
}

/** The event itself when it fits; otherwise a copy with its longest strings cut. */
export function fitEvent<T extends object>(event: T, maxBytes = MAX_EVENT_BYTES): T {
  let size = Buffer.byteLength(JSON.stringify(event));
  if (size <= maxBytes) return event;
  const copy = structuredClone(event);
  for (let i = 0; i < 50 && size > maxBytes; i++) {
    const leaf = longestString(copy);
    if (!leaf || leaf.value.length < 1024) break;
    // Cut by the excess (in characters, which are never fewer than the bytes they take), and a margin.
    const keep = Math.max(512, leaf.value.length - (size - maxBytes) - 1024);
    const cut = `${leaf.value.slice(0, keep)}\n[... ${leaf.value.length - keep} characters left out: the event was too large]`;
    (leaf.holder as Record<string | number, unknown>)[leaf.key] = cut;
    size = Buffer.byteLength(JSON.stringify(copy));
  }
  return copy;
}
