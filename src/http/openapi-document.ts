/** Builds the OpenAPI 3.1 document from the routes' zod schemas: nothing in it is written by hand. */
import { OpenApiGeneratorV31, type OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { SECURITY_SCHEMES } from '../web/security';

export const API_VERSION = '0.0.1';

export function buildOpenApiDocument(registry: OpenAPIRegistry, serverUrl: string) {
  for (const [name, scheme] of Object.entries(SECURITY_SCHEMES)) {
    registry.registerComponent('securitySchemes', name, { ...scheme });
  }
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Agent Conversation Control Service',
      version: API_VERSION,
      description:
        'Control plane for AI software-agent conversations: starts, sandboxes, the event log and organizations. ' +
        'Every /api route needs the X-Access-Token header (APIKeyHeader) unless it says otherwise. ' +
        'Invalid path, query or body parameters answer 422 with an HTTPValidationError body. ' +
        'A string holding U+0000 is refused (422 of type string_nul; 404 in a path): the store cannot keep it. ' +
        'A page_id is an opaque cursor: only the next_page_id of a previous page is one (any other is a 422). ' +
        'Every request is answered within ANSWER_DEADLINE_MS (9 s by default), or with a 503 and Retry-After.',
    },
    servers: [{ url: serverUrl }],
  });
  return safeIntegers(nullableRefs(document));
}

/**
 * The generator writes a nullable named schema as `allOf: [{$ref}, {type: [T, 'null']}]`, which `null` never
 * satisfies (the $ref refuses it): each becomes `anyOf: [{$ref}, {type: 'null'}]`, what the answers hold.
 */
export function nullableRefs<T>(node: T): T {
  if (Array.isArray(node)) return node.map(nullableRefs) as T;
  if (!node || typeof node !== 'object') return node;
  const o = node as Record<string, unknown>;
  const [ref, nullable, ...more] = Array.isArray(o.allOf) ? (o.allOf as Record<string, unknown>[]) : [];
  const types = nullable?.type;
  if (
    more.length === 0 &&
    typeof ref?.$ref === 'string' &&
    Object.keys(nullable ?? {}).length === 1 &&
    Array.isArray(types) &&
    types.includes('null')
  ) {
    const { allOf: _, ...rest } = o;
    return { ...nullableRefs(rest), anyOf: [ref, { type: 'null' }] } as T;
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, nullableRefs(v)])) as T;
}

/**
 * zod's `.int()` takes safe integers only (|n| <= 2^53 - 1), which the generator does not write: each
 * integer schema without its own bound gets that one, so the document allows what the api accepts.
 */
export function safeIntegers<T>(node: T): T {
  if (Array.isArray(node)) return node.map(safeIntegers) as T;
  if (!node || typeof node !== 'object') return node;
  const o = Object.fromEntries(Object.entries(node as Record<string, unknown>).map(([k, v]) => [k, safeIntegers(v)]));
  const integer = o.type === 'integer' || (Array.isArray(o.type) && o.type.includes('integer'));
  if (!integer) return o as T;
  if (o.maximum === undefined && o.exclusiveMaximum === undefined) o.maximum = Number.MAX_SAFE_INTEGER;
  if (o.minimum === undefined && o.exclusiveMinimum === undefined) o.minimum = Number.MIN_SAFE_INTEGER;
  return o as T;
}
