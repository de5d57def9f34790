/**
 * Unit tests of the app-conversation query parameters (SPEC 3.1): limits, sort orders, filters, page ids
 * and ids; and the start request's refusal of credentials inside a repository or plugin URL.
 */
import { encodeCursor } from '../src/schemas/page-cursor';
import {
  APP_CONVERSATIONS_LISTING,
  AppConversationSearchQuerySchema,
  IdsQuerySchema,
  StartRequestSchema,
  StartTaskCountQuerySchema,
  StartTaskSearchQuerySchema,
} from '../src/schemas/app-conversations';
import { detail, UUID } from './helpers/start-request-samples';

describe('query parameters', () => {
  it('coerce limit, default the sort order, refuse limit 0 and 101', () => {
    expect(StartTaskSearchQuerySchema.parse({ limit: '5' })).toEqual({ limit: 5, sort_order: 'CREATED_AT_DESC' });
    expect(AppConversationSearchQuerySchema.parse({ sort_order: 'UPDATED_AT' })).toEqual({
      limit: 100,
      sort_order: 'UPDATED_AT',
    });
    for (const schema of [StartTaskSearchQuerySchema, AppConversationSearchQuerySchema]) {
      expect(detail(schema, { limit: '0' }, 'query')[0]).toMatchObject({
        loc: ['query', 'limit'],
        type: 'greater_than',
      });
      expect(detail(schema, { limit: '101' }, 'query')[0]).toMatchObject({
        loc: ['query', 'limit'],
        type: 'less_than_equal',
      });
    }
    for (const sort_order of ['CREATED_AT', 'CREATED_AT_DESC', 'UPDATED_AT', 'UPDATED_AT_DESC']) {
      expect(StartTaskSearchQuerySchema.parse({ sort_order })).toEqual({ limit: 100, sort_order });
    }
    expect(detail(StartTaskSearchQuerySchema, { sort_order: 'TITLE' }, 'query')[0]!.type).toBe('enum');
  });

  it('normalise filters and refuse a page_id from elsewhere', () => {
    expect(
      StartTaskCountQuerySchema.parse({
        conversation_id__eq: UUID.replace(/-/g, ''),
        created_at__gte: '2024-05-01T12:00:00Z',
      }),
    ).toEqual({
      conversation_id__eq: UUID,
      created_at__gte: '2024-05-01T12:00:00.000000Z',
    });
    expect(detail(StartTaskCountQuerySchema, { conversation_id__eq: 'x' }, 'query')[0]!.type).toBe('uuid_parsing');
    expect(detail(AppConversationSearchQuerySchema, { page_id: 'bm9wZQ' }, 'query')[0]).toMatchObject({
      loc: ['query', 'page_id'],
      type: 'value_error',
    });
    const cursor = encodeCursor(APP_CONVERSATIONS_LISTING, [1714564800000, 'c1']);
    expect(AppConversationSearchQuerySchema.parse({ page_id: cursor }).page_id).toEqual([1714564800000, 'c1']);
    expect(StartTaskSearchQuerySchema.safeParse({ page_id: cursor }).success).toBe(false);
  });

  it('ids: 1..100 repeated values', () => {
    expect(IdsQuerySchema.parse({ id: ['a', 'b'] })).toEqual({ id: ['a', 'b'] });
    expect(detail(IdsQuerySchema, { id: [] }, 'query')[0]!.type).toBe('too_short');
    expect(detail(IdsQuerySchema, { id: Array.from({ length: 101 }, (_, i) => `c${i}`) }, 'query')[0]!.type).toBe(
      'too_long',
    );
  });

  it('refuses credentials inside a repository or plugin URL (they belong in secrets)', () => {
    const bad = StartRequestSchema.safeParse({
      selected_repository: 'https://user:pat123@git.example.com/a/b.git',
      plugins: [{ source: 'https://x-access-token:t@example.com/p.git' }],
    });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => i.path.join('.'))).toEqual(['selected_repository', 'plugins.0.source']);
    expect(StartRequestSchema.safeParse({ selected_repository: 'https://git.example.com/a/b.git' }).success).toBe(true);
    expect(StartRequestSchema.safeParse({ selected_repository: 'git@git.example.com:a/b.git' }).success).toBe(true);
    expect(StartRequestSchema.safeParse({ selected_repository: 'acme/widgets' }).success).toBe(true);
  });
});
