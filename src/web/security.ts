/**
 * The credential headers and their OpenAPI security schemes, shared by the api (which checks API keys and
 * session keys against its stores, src/http/auth.ts) and the in-sandbox runtime (which checks its own
 * session key). APIKeyHeader (SPEC 5): `X-Access-Token` carries a user's API key.
 */
import type { Middleware } from 'koa';

export const ACCESS_TOKEN_HEADER = 'X-Access-Token';
import { SESSION_KEY_HEADER } from '../schemas/sandboxes';

export { SESSION_KEY_HEADER };

export const SECURITY_SCHEMES = {
  APIKeyHeader: { type: 'apiKey', in: 'header', name: ACCESS_TOKEN_HEADER },
  /** The session key of the sandbox that runs a conversation: runtimes report events with it. */
  SessionAPIKeyHeader: { type: 'apiKey', in: 'header', name: SESSION_KEY_HEADER },
} as const;

export type SecuritySchemeName = keyof typeof SECURITY_SCHEMES;

/** The middleware that checks each scheme, as the server using the router defines it. */
export type AuthMiddlewares = Partial<Record<SecuritySchemeName, Middleware>>;
