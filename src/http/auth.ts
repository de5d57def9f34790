/**
 * The api's authentication middlewares, by their OpenAPI scheme names (src/web/security.ts): a user's API
 * key, stored as a SHA-256 hash in `api_keys`, and a sandbox's session key for its conversations' events.
 */
import type { Middleware } from 'koa';
import type { ApiKeysStore } from '../store/api-keys-store';
import type { ConversationsStore } from '../store/conversations-store';
import { unauthorized } from '../web/errors';
import { ACCESS_TOKEN_HEADER, SESSION_KEY_HEADER } from '../web/security';

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
