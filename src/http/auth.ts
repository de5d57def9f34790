/**
 * Authentication schemes of the api, by their OpenAPI names. APIKeyHeader (SPEC 5): `X-Access-Token`
 * carries a user's API key, stored as a SHA-256 hash in `api_keys`.
 */
import type { Middleware } from 'koa';
import type { ApiKeysStore } from '../store/api-keys-store';
import type { ConversationsStore } from '../store/conversations-store';
import { unauthorized } from './errors';

export const ACCESS_TOKEN_HEADER = 'X-Access-Token';
export const SESSION_KEY_HEADER = 'X-Session-API-Key';

export const SECURITY_SCHEMES = {
  APIKeyHeader: { type: 'apiKey', in: 'header', name: ACCESS_TOKEN_HEADER },
  /** The session key of the sandbox that runs a conversation: runtimes report events with it. */
  SessionAPIKeyHeader: { type: 'apiKey', in: 'header', name: SESSION_KEY_HEADER },
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

/** For routes with a `conversation_id` path parameter: the key must be that conversation's sandbox's. */
export function sessionKeyAuth(conversations: ConversationsStore): Middleware {
  return async (ctx, next) => {
    const raw = ctx.get(SESSION_KEY_HEADER);
    if (!raw) throw unauthorized(`Missing ${SESSION_KEY_HEADER} header`);
    const conversationId = (ctx as unknown as { params: Record<string, string> }).params.conversation_id ?? '';
    if (!(await conversations.sessionKeyMatches(conversationId, raw))) {
      throw unauthorized(`${SESSION_KEY_HEADER} does not authorize events for this conversation`);
    }
    return next();
  };
}
