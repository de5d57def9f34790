/**
 * GitHostAV1CallbackProcessor: when the agent finishes, its summary as a comment on the pull request the
 * start came from, through the git host's REST API (GIT_HOST_A_API_URL). A comment posted once is never
 * posted again: the round records it, and the comment carries a marker a retry looks for.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { EchoedStartRequest } from '../../src/schemas/app-conversations';
import type { Event } from '../../src/schemas/events';
import type { AppConversationRecord } from '../../src/store/app-conversations-store';
import { textOf, type CallbackProcessorDeps, type CallbackProcessorImpl } from './processor';

const COMMENT_POSTED = 'comment-posted';

/** What the agent said it did: its finish message, else its last message. */
export function summaryOf(events: readonly Event[]): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    const message = e.kind === 'ActionEvent' && e.action?.kind === 'FinishAction' ? e.action.message : undefined;
    if (typeof message === 'string') return message;
    if (e.kind === 'MessageEvent' && e.source === 'agent') return textOf(e.llm_message.content);
  }
  return null;
}

export const isFinished = (events: readonly Event[]): boolean =>
  events.some((e) => e.kind === 'ConversationStateUpdateEvent' && e.key === 'execution_status' && e.value === 'finished');

/**
 * The pull request to comment on: the processor's view data, else the start's repository and first
 * pr_number; null unless that names an owner/repo and a number.
 */
export function pullRequestTarget(view: Record<string, unknown>, selectedRepository: string | null, requestPrNumbers?: readonly number[]) {
  const repo = (view.repo as string | undefined) ?? (view.full_name as string | undefined) ?? selectedRepository ?? undefined;
  const number = (view.pr_number as number | undefined) ?? (view.number as number | undefined) ?? requestPrNumbers?.[0];
  if (!repo || !/^[^/\s]+\/[^/\s]+$/.test(repo) || number === undefined) return null;
  return { repo, number };
}

/** The marker in the comment: a retry after a crash between the post and its record finds the comment posted. */
export const commentMarker = (conversationId: string) => `<!-- agent-control:conversation=${conversationId} -->`;

export const commentBody = (conversationId: string, summary: string | null) =>
  `${summary ? `The agent finished:\n\n${summary}` : 'The agent finished.'}\n\n${commentMarker(conversationId)}`;

async function openRequestSecrets(app: AppConversationRecord, deps: CallbackProcessorDeps): Promise<Record<string, string>> {
  const sealed = app.start_task_id ? await deps.startTasks.sealedSecrets(app.start_task_id) : null;
  return sealed ? (JSON.parse(deps.box.open(sealed)) as Record<string, string>) : {};
}

export const gitHostAV1Processor: CallbackProcessorImpl<'GitHostAV1CallbackProcessor'> = {
  kind: 'GitHostAV1CallbackProcessor',
  async process({ conversationId, app, index, processor, events }, deps) {
    if (!isFinished(events)) return [];
    if (await deps.callbacks.done(conversationId, index, COMMENT_POSTED)) return [];
    const request = app.start_task_id ? ((await deps.startTasks.get(app.start_task_id))?.request as EchoedStartRequest | undefined) : undefined;
    const view = (processor.git_host_a_view_data as Record<string, unknown> | undefined) ?? {};
    const target = pullRequestTarget(view, app.selected_repository, request?.pr_number);
    if (!target) throw ApplicationFailure.nonRetryable('no pull request to comment on: the start has no owner/repo selected_repository and pr_number, nor does git_host_a_view_data name one');
    const all = (await deps.events.range(conversationId, 0, 100_000)).map((r) => JSON.parse(r.json) as Event);
    const summary = processor.should_request_summary === false ? null : summaryOf(all);
    const marker = commentMarker(conversationId);
    const body = commentBody(conversationId, summary);
    const { secrets } = await deps.settings.resolve(app.created_by_user_id, await openRequestSecrets(app, deps));
    const token = secrets.GIT_HOST_A_TOKEN ?? secrets.GIT_TOKEN;
    const url = `${deps.gitHostAApiUrl}/repos/${target.repo}/issues/${target.number}/comments`;
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) };
    const listed = await fetch(`${url}?per_page=100`, { headers, signal: AbortSignal.timeout(30_000) });
    if (listed.ok) {
      const comments = (await listed.json()) as { body?: string }[];
      if (Array.isArray(comments) && comments.some((c) => c.body?.includes(marker))) return [COMMENT_POSTED];
    } else await listed.body?.cancel();
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ body }), signal: AbortSignal.timeout(30_000) });
    const answer = (await res.text()).slice(0, 300);
    if (res.status === 401 || res.status === 403 || res.status === 404 || res.status === 422) {
      throw ApplicationFailure.nonRetryable(`the git host refused the comment on ${target.repo}#${target.number} (${res.status}): ${answer}`);
    }
    if (!res.ok) throw new Error(`the git host answered ${res.status} for the comment on ${target.repo}#${target.number}: ${answer}`);
    return [COMMENT_POSTED];
  },
};
