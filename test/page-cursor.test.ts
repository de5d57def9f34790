import { z } from 'zod';
import { encodeCursor, pageIdParam } from '../src/schemas/page-cursor';

describe('page_id cursors', () => {
  const param = pageIdParam('events', z.tuple([z.string(), z.number().int()]));

  it('round-trips the sort key of the last item', () => {
    const id = encodeCursor('events', ['2024-01-01T00:00:00.000Z', 42]);
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(param.parse(id)).toEqual(['2024-01-01T00:00:00.000Z', 42]);
  });

  it('an empty page_id is no cursor: the first page, as the published clients send it', () => {
    expect(param.parse('')).toBeUndefined();
  });

  it.each([
    ['garbage', 'not base64 json'],
    ['from another listing', encodeCursor('api-keys', ['2024-01-01T00:00:00.000Z', 42])],
    ['of another shape', encodeCursor('events', [42, '2024'])],
    ['truncated', encodeCursor('events', ['2024-01-01T00:00:00.000Z', 42]).slice(0, -3)],
  ])('rejects a page_id that is %s', (_what, value) => {
    const r = param.safeParse(value);
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.message).toMatch(/Invalid page_id/);
  });
});
