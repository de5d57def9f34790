/**
 * The api's authentication middlewares, by their OpenAPI scheme names (src/web/security.ts): a user's API
 * key, stored as a SHA-256 hash in `api_keys`, and a sandbox's session key for its conversations' events.
 */
import type { Middleware } from 'koa';
import { canonicalConversationId } from '../schemas/common';
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

/**
 * For routes with a `conversation_id` path parameter: the key must be that conversation's sandbox's
 * (the id as the route reads it: a UUID spelled as 32 hex digits is the same conversation). For a
 * route without one, the key must be some conversation's; the handler checks the one its body names.
 */
export function sessionKeyAuth(conversations: ConversationsStore): Middleware {
  return async (ctx, next) => {
    const raw = ctx.get(SESSION_KEY_HEADER);
    if (!raw) throw unauthorized(`Missing ${SESSION_KEY_HEADER} header`);
    const param = (ctx as unknown as { params: Record<string, string | undefined> }).params.conversation_id;
    const allowed =
      param === undefined
        ? await conversations.anyWithSessionKey(raw)
        : await conversations.sessionKeyMatches(canonicalConversationId(param), raw);
    if (!allowed) throw unauthorized(`${SESSION_KEY_HEADER} does not authorize events for this conversation`);
    return next();
  };
}
