/**
 * One place that ties a route's zod schemas to both its validation and its OpenAPI description:
 * `router.route({ method, path, params, query, body, responses }, handler)` registers the Koa route,
 * validates path, query and body before the handler runs (422 with every problem at once), and adds the
 * operation to the OpenAPI registry. The handler gets the parsed, typed values.
 */
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { ErrorResponseSchema, HTTPValidationErrorSchema } from '../schemas/errors';
import type { AuthMiddlewares, SecuritySchemeName } from './security';
import { RequestValidationError } from './errors';
import { jsonBody } from './json-body';
import { toValidationDetail, type InputPart, type ValidationDetail } from '../schemas/validation-detail';

type AnyObject = z.ZodObject<z.ZodRawShape>;
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** Defaults to application/json. */
  contentType?: string;
}

/** A refusal a route declares: its description, with the `{detail}` body every refusal has. */
export const errorResponse = (description: string): ResponseSpec => ({ description, schema: ErrorResponseSchema });

export interface RouteSpec<P extends AnyObject, Q extends AnyObject, B extends z.ZodType> {
  method: Method;
  /** Koa path relative to the router's prefix, with `:name` parameters. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** Which credential the route needs; null for public routes. */
  security: SecuritySchemeName | null;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * Strings of the body may hold U+0000 (refused by default where the router says so): for a body that
   * is stored as JSON text, where the character is an escape, not a character of a stored string.
   */
  bodyMayHoldNul?: boolean;
  /** Applied to the body as read, before it is validated (the ingest fits events to the schemas). */
  prepareBody?: (raw: unknown, ctx: RouteContext) => unknown;
  /**
   * When the body fails validation: a body to validate once more given the issues (the ingest takes out
   * fields a newer runtime added deep in an event), or null to let the 422 stand.
   */
  refitBody?: (body: unknown, issues: readonly z.core.$ZodIssue[], ctx: RouteContext) => unknown | null;
  responses: Record<number, ResponseSpec>;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteInput<P, Q, B> {
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
}

export type RouteContext = ParameterizedContext;

function isArraySchema(schema: z.ZodType | undefined): boolean {
  let s: unknown = schema;
  while (s instanceof z.ZodOptional || s instanceof z.ZodDefault) s = s.unwrap();
  return s instanceof z.ZodArray;
}

/**
 * Koa gives repeated query parameters as arrays. A list parameter (`?id=a&id=b`) keeps them all; a
 * scalar one takes the last value, as FastAPI does.
 */
function queryValues(
  query: Record<string, string | string[] | undefined>,
  schema: AnyObject | undefined,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    if (isArraySchema(schema?.shape[k] as z.ZodType | undefined)) out[k] = Array.isArray(v) ? v : [v];
    else out[k] = Array.isArray(v) ? v[v.length - 1]! : v;
  }
  return out;
}

function parsePart(
  schema: z.ZodType | undefined,
  raw: unknown,
  part: InputPart,
  problems: ValidationDetail[],
): unknown {
  if (!schema) return undefined;
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  problems.push(...toValidationDetail(r.error.issues, raw, part));
  return undefined;
}

/** The body, prepared and validated; refitted and validated once more when the route knows how. */
function parseBody(
  spec: Pick<RouteSpec<AnyObject, AnyObject, z.ZodType>, 'body' | 'prepareBody' | 'refitBody'>,
  ctx: RouteContext,
  problems: ValidationDetail[],
): unknown {
  if (!spec.body) return undefined;
  const raw = spec.prepareBody ? spec.prepareBody(ctx.state.body, ctx) : ctx.state.body;
  const r = spec.body.safeParse(raw);
  if (r.success) return r.data;
  const refitted = spec.refitBody?.(raw, r.error.issues, ctx) ?? null;
  if (refitted !== null) return parsePart(spec.body, refitted, 'body', problems);
  problems.push(...toValidationDetail(r.error.issues, raw, 'body'));
  return undefined;
}

const toOpenApiPath = (p: string) => p.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/**
 * The methods the api knows (RFC 9110's, PATCH, and QUERY, HTTP's safe method with a body, which OpenAPI 3.2
 * describes; CONNECT never reaches a router, Node answers it): one a route does not serve is a 405 with its
 * Allow header; one of another protocol (WebDAV's PROPFIND) a 501, and one no protocol defines never gets
 * past Node's parser (400).
 */
/** Node's limit of a request's line and headers (its default `maxHeaderSize`), which the api keeps. */
const REQUEST_HEAD_LIMIT_KIB = 16;

const KNOWN_METHODS = ['HEAD', 'OPTIONS', 'GET', 'PUT', 'PATCH', 'POST', 'DELETE', 'TRACE', 'QUERY'];

export class ApiRouter {
  readonly router: Router;

  constructor(
    private readonly opts: {
      prefix: string;
      tag: string;
      /** Where each route is described for the OpenAPI document; a server that publishes none omits it. */
      registry?: OpenAPIRegistry;
      auth: AuthMiddlewares;
      maxBodyBytes: number;
      /** Refuse U+0000 in body strings (422), unless a route says its body may hold it. */
      rejectNul?: boolean;
    },
  ) {
    // The prefix is joined here rather than by Router's own `prefix`, which cannot route a resource's
    // root (an empty path) under it.
    this.router = new Router({ methods: KNOWN_METHODS });
  }

  route<P extends AnyObject, Q extends AnyObject, B extends z.ZodType>(
    spec: RouteSpec<P, Q, B>,
    handler: (ctx: RouteContext, input: RouteInput<P, Q, B>) => Promise<void> | void,
  ): this {
    this.register(spec);
    const check = spec.security && this.opts.auth[spec.security];
    if (spec.security && !check)
      throw new Error(`route ${spec.method} ${spec.path} needs ${spec.security}, which this server does not check`);
    const validate = async (ctx: RouteContext) => {
      const problems: ValidationDetail[] = [];
      const params = parsePart(spec.params, ctx.params, 'path', problems);
      const query = parsePart(spec.query, queryValues(ctx.query, spec.query), 'query', problems);
      const body = parseBody(spec, ctx, problems);
      if (problems.length > 0) throw new RequestValidationError(problems);
      await handler(ctx, { params, query, body } as RouteInput<P, Q, B>);
    };
    // The credential first, then the body: a caller without one never makes the server read a body,
    // and a route that takes none never reads one.
    const middleware = [
      ...(check ? [check] : []),
      ...(spec.body ? [jsonBody(this.opts.maxBodyBytes, Boolean(this.opts.rejectNul) && !spec.bodyMayHoldNul)] : []),
      validate,
    ];
    this.router[spec.method](this.opts.prefix + spec.path, ...middleware);
    return this;
  }

  private register(spec: RouteSpec<AnyObject, AnyObject, z.ZodType>): void {
    if (!this.opts.registry) return;
    const responses: Record<string, object> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      responses[status] = {
        description: r.description,
        ...(r.schema ? { content: { [r.contentType ?? 'application/json']: { schema: r.schema } } } : {}),
      };
    }
    if (spec.security) {
      responses[401] ??= {
        description: 'Missing or invalid credential',
        content: { 'application/json': { schema: ErrorResponseSchema } },
      };
    }
    if (spec.body) {
      responses[413] ??= {
        description: `The body is larger than the limit (${this.opts.maxBodyBytes} bytes); nothing was read past it`,
        content: { 'application/json': { schema: ErrorResponseSchema } },
      };
      responses[415] ??= {
        description: 'The body is not JSON (Content-Type)',
        content: { 'application/json': { schema: ErrorResponseSchema } },
      };
    }
    // Node refuses a request line and headers over its limit before any route reads them.
    responses[431] ??= {
      description: `The request line and headers together are larger than ${REQUEST_HEAD_LIMIT_KIB} KiB (a long query string, say)`,
      content: { 'application/json': { schema: ErrorResponseSchema } },
    };
    // A path holding U+0000 names nothing the store could hold: 404 before any route (docs/api.md).
    if (spec.params) {
      responses[404] ??= {
        description: 'No such resource (a path parameter holding U+0000 names none)',
        content: { 'application/json': { schema: ErrorResponseSchema } },
      };
    }
    // Every request has its answer deadline (answer-deadline.ts), and each store and Temporal call its bound below it.
    responses[503] ??= {
      description:
        'A dependency is slow or not answering: the request ran out of its deadline (ANSWER_DEADLINE_MS) or of a ' +
        "store's time budget. It may still take effect: read the resource again, or retry after Retry-After",
      content: { 'application/json': { schema: ErrorResponseSchema } },
    };
    if (spec.params || spec.query || spec.body) {
      responses[422] ??= {
        description: 'Validation Error',
        content: { 'application/json': { schema: HTTPValidationErrorSchema } },
      };
    }
    this.opts.registry.registerPath({
      method: spec.method,
      path: toOpenApiPath(this.opts.prefix + spec.path),
      operationId: spec.operationId,
      summary: spec.summary,
      description: spec.description,
      tags: [this.opts.tag],
      security: spec.security ? [{ [spec.security]: [] }] : [],
      request: {
        params: spec.params,
        query: spec.query,
        body: spec.body
          ? {
              required: !spec.body.safeParse(undefined).success,
              content: { 'application/json': { schema: spec.body } },
            }
          : undefined,
      },
      responses,
    });
  }
}
