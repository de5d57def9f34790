/**
 * GitHostAV1CallbackProcessor: when the agent finishes, its summary as a comment on the pull request the
 * start came from, through git host A's REST API (GIT_HOST_A_API_URL); with `inline_pr_comment`, as a
 * reply in the review comment thread the view data names (`comment_id`). The comment carries a marker a
 * retry looks for (among the comments since the conversation began) before it posts.
 */
import { REPOSITORY_NAME, type EchoedStartRequest } from '../../src/schemas/app-conversations';
import type { CallbackProcessorDeps, CallbackProcessorImpl, CallbackRun } from './processor';
import {
  anyMarked,
  commentMarker,
  linkNext,
  postSummaryOnce,
  restTarget,
  targetMissing,
  storedSecrets,
  viewField,
  type SummaryTarget,
} from './summary-post';

/**
 * The pull request to comment on: the processor's view data, else the start's repository and first
 * pr_number; null unless that names an owner/repo and a number.
 */
export function pullRequestTarget(
  view: Record<string, unknown>,
  selectedRepository: string | null,
  requestPrNumbers?: readonly number[],
) {
  const repo = viewField(view, 'repo', 'full_name') ?? selectedRepository ?? undefined;
  const number =
    viewField(view, 'pr_number', 'number') ??
    (requestPrNumbers?.[0] !== undefined ? String(requestPrNumbers[0]) : undefined);
  if (!repo || !REPOSITORY_NAME.test(repo) || number === undefined || !/^\d+$/.test(number)) return null;
  return { repo, number: Number(number) };
}

/** The start request a conversation came from (its pr_number), when a start made it. */
export async function startRequestOf(
  run: CallbackRun,
  deps: CallbackProcessorDeps,
): Promise<EchoedStartRequest | undefined> {
  return run.app.start_task_id
    ? ((await deps.startTasks.get(run.app.start_task_id))?.request as EchoedStartRequest | undefined)
    : undefined;
}

async function gitHostATarget(run: CallbackRun, deps: CallbackProcessorDeps): Promise<SummaryTarget> {
  const { app, processor } = run;
  const view = (processor.git_host_a_view_data as Record<string, unknown> | undefined) ?? {};
  const target = pullRequestTarget(view, app.selected_repository, (await startRequestOf(run, deps))?.pr_number);
  if (!target)
    throw targetMissing(
      'no pull request to comment on: the start has no owner/repo selected_repository and pr_number, nor does git_host_a_view_data name one',
    );
  const inline = processor.inline_pr_comment === true;
  const commentId = viewField(view, 'comment_id', 'review_comment_id');
  if (inline && (!commentId || !/^\d+$/.test(commentId)))
    throw targetMissing(
      'inline_pr_comment is set but git_host_a_view_data names no review comment (comment_id) to reply to',
    );
  const secrets = await storedSecrets(app, deps);
  const token = secrets.GIT_HOST_A_TOKEN ?? secrets.GIT_TOKEN;
  const pulls = `${deps.gitHostAApiUrl}/repos/${target.repo}/pulls/${target.number}`;
  const issue = `${deps.gitHostAApiUrl}/repos/${target.repo}/issues/${target.number}`;
  const since = `per_page=100&since=${encodeURIComponent(app.created_at.toISOString())}`;
  return restTarget({
    host: 'git host A',
    name: `${target.repo}#${target.number}${inline ? ` (review thread ${commentId})` : ''}`,
    headers: token ? { Authorization: `Bearer ${token}` } : {},
    listUrl: inline ? `${pulls}/comments?${since}` : `${issue}/comments?${since}`,
    nextPage: linkNext, // oldest first: a busy pull request is read on
    signal: run.signal,
    postUrl: inline ? `${pulls}/comments/${commentId}/replies` : `${issue}/comments`,
    postBody: (text, conversationId) => ({ body: `${text}\n\n${commentMarker(conversationId)}` }),
    holds: (listed, conversationId) => anyMarked(listed, conversationId, (c) => c.body),
    secrets: token ? [token] : [],
  });
}

export const gitHostAV1Processor: CallbackProcessorImpl<'GitHostAV1CallbackProcessor'> = {
  kind: 'GitHostAV1CallbackProcessor',
  process: (run, deps) => postSummaryOnce(run, deps, () => gitHostATarget(run, deps)),
};
