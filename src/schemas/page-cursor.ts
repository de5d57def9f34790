/**
 * Opaque `page_id` cursors: the sort key of the last item of a page, tagged with the listing it belongs
 * to, as base64url JSON. A cursor that is damaged, forged into another shape, or from another listing is
 * a validation error (422), never a server error or a silently wrong page.
 */
import { z } from 'zod';

export function encodeCursor(listing: string, key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify([listing, ...key]), 'utf8').toString('base64url');
}

/**
 * A zod schema for the `page_id` query parameter of one listing, yielding the decoded key; an empty one is
 * no cursor (the first page), as in the published API, whose clients send `page_id=` for "from the start".
 */
export function pageIdParam<K extends z.ZodTuple>(listing: string, key: K) {
  return z.string().transform((raw, ctx): z.output<K> | undefined => {
    if (raw === '') return undefined;
    const fail = (): never => {
      ctx.addIssue({
        code: 'custom',
        message: 'Invalid page_id: pass the next_page_id of a previous page unchanged',
        params: { type: 'value_error', ctx: { error: 'invalid page_id' } },
      });
      return z.NEVER;
    };
    if (!/^[A-Za-z0-9_-]{1,2048}$/.test(raw)) return fail();
    let decoded: unknown;
    try {
      decoded = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
    } catch {
      return fail();
    }
    if (!Array.isArray(decoded) || decoded[0] !== listing) return fail();
    const parsed = key.safeParse(decoded.slice(1));
    return parsed.success ? parsed.data : fail();
  });
}
