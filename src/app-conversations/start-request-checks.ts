/**
 * What a start request is refused for before anything of it is stored: a server the operator does not
 * allow, a conversation it may not take, an LLM profile the caller does not have, the caller's quotas.
 */
import { Conflict, InvalidInput, TooMany } from '../errors';
import type { StartRequest } from '../schemas/app-conversations';
import { issueTrackerBServerRefusal } from './issue-tracker-b-servers';
import type { StartTaskServiceDeps } from './start-task-service';

/** A processor that names a server the operator does not allow is refused before anything starts. */
export function refuseUnknownServers(request: StartRequest, allowedOrigins: readonly string[]): void {
  const details = request.processors.flatMap((p, i) => {
    if (p.kind !== 'IssueTrackerBV1CallbackProcessor' || !('base_api_url' in p)) return [];
    const refused = issueTrackerBServerRefusal(p.base_api_url, allowedOrigins);
    return refused
      ? [{ loc: ['body', 'processors', i, 'base_api_url'], msg: refused, type: 'value_error', input: p.base_api_url }]
      : [];
  });
  if (details.length > 0) throw new InvalidInput(details);
}

/**
 * A conversation_id that names an existing conversation is a join only when a start made it (its task
 * exists: create() then checks the task's owner). Any other conversation, another user's or one made
 * outside a start (the demo's), is never taken over: 409. This check comes before the task record; the
 * startConversation activity refuses an id taken in the meantime.
 */
export async function refuseTakenConversation(
  { conversations, startTasks }: Pick<StartTaskServiceDeps, 'conversations' | 'startTasks'>,
  id: string,
  userId: string,
): Promise<void> {
  const conversation = await conversations.get(id);
  if (!conversation || (await startTasks.get(id))) return;
  throw new Conflict(
    conversation.created_by_user_id === userId
      ? `conversation_id ${id} names a conversation that was not made by a start; send another conversation_id, or none`
      : `conversation_id ${id} is already in use`,
  );
}

/** An agent_profile_id must name one of the caller's saved LLM profiles (the start uses its LLM). */
export async function refuseUnknownProfile(
  llmProfiles: StartTaskServiceDeps['llmProfiles'],
  userId: string,
  request: StartRequest,
): Promise<void> {
  const id = request.agent_profile_id;
  if (!id || (llmProfiles && (await llmProfiles.byId(userId, id)))) return;
  throw new InvalidInput([
    {
      loc: ['body', 'agent_profile_id'],
      msg: `You have no LLM profile with id ${id}: GET /api/v1/settings/profiles lists yours`,
      type: 'value_error',
      input: id,
    },
  ]);
}

/**
 * A start past USER_MAX_PENDING_STARTS starts not ended, or past USER_MAX_CONVERSATIONS conversations
 * (with those its unfinished starts will make), is a 429 saying which; a resend that joins a start of
 * the caller's is not a new one.
 */
export async function refuseOverQuota(
  deps: Pick<StartTaskServiceDeps, 'maxPending' | 'maxConversations' | 'appConversations' | 'startTasks'>,
  id: string,
  userId: string,
  request: StartRequest,
): Promise<void> {
  const { maxPending, maxConversations, appConversations, startTasks } = deps;
  if (!maxPending && !(maxConversations && appConversations)) return;
  const [pending, kept] = await Promise.all([
    startTasks.countUnfinished(userId),
    maxConversations && appConversations ? appConversations.count(userId, {}) : 0,
  ]);
  const overPending = !!maxPending && pending >= maxPending;
  const overConversations = !!maxConversations && kept + pending >= maxConversations;
  if (!overPending && !overConversations) return;
  if (request.conversation_id !== undefined && (await startTasks.get(id))?.created_by_user_id === userId) return;
  if (overPending) {
    throw new TooMany(
      `You have ${pending} starts not finished (under way or waiting in line), as many as one user may (USER_MAX_PENDING_STARTS=${maxPending}): wait for some to end`,
    );
  }
  throw new TooMany(
    `You keep ${kept} conversations${pending ? ` and ${pending} starts will make ${pending === 1 ? 'one' : 'more'}` : ''}, as many as one user may (USER_MAX_CONVERSATIONS=${maxConversations}): delete some first`,
  );
}
