/**
 * Authentication schemes of the api, by their OpenAPI names. APIKeyHeader (SPEC 5): `X-Access-Token`
 * carries a user's API key, stored as a SHA-256 hash in `api_keys`.
 */
import type { Middleware } from 'koa';
import type { ApiKeysStore } from '../store/api-keys-store';
import { unauthorized } from './errors';

export const ACCESS_TOKEN_HEADER = 'X-Access-Token';

export const SECURITY_SCHEMES = {
  APIKeyHeader: { type: 'apiKey', in: 'header', name: ACCESS_TOKEN_HEADER },
} as const;

export type SecuritySchemeName = keyof typeof SECURITY_SCHEMES;

export type AuthMiddlewares = Record<SecuritySchemeName, Middleware>;

export function apiKeyAuth(apiKeys: ApiKeysStore): Middleware {
  return async (ctx, next) => {
    const raw = ctx.get(ACCESS_TOKEN_HEADER);
    if (!raw) throw unauthorized(`Missing ${ACCESS_TOKEN_HEADER} header`);
    const userId = await apiKeys.resolve(raw);
    if (!userId) throw unauthorized('Invalid API key');
    ctx.state.caller = { userId };
    return next();
  };
}
