/**
 * GitHostBV1CallbackProcessor: when the agent finishes, its summary as a note on the merge request the
 * start came from, through git host B's REST API (GIT_HOST_B_API_URL, `/projects/:id/merge_requests/:iid/notes`);
 * with `inline_mr_comment`, as a note in the discussion the view data names (`discussion_id`). The
 * token is the user's stored git_host_b provider token (GIT_HOST_B_TOKEN).
 */
import { startRequestOf } from './git-host-a-v1-processor';
import type { CallbackProcessorDeps, CallbackProcessorImpl, CallbackRun } from './processor';
import {
  anyMarked,
  commentMarker,
  postSummaryOnce,
  restTarget,
  targetMissing,
  storedSecrets,
  viewField,
  type SummaryTarget,
} from './summary-post';

/** The merge request: a project (numeric id or path) and its iid, from the view data, else from the start. */
export function mergeRequestTarget(
  view: Record<string, unknown>,
  selectedRepository: string | null,
  requestPrNumbers?: readonly number[],
) {
  const project = viewField(view, 'project_id', 'full_path', 'repo') ?? selectedRepository ?? undefined;
  const iid =
    viewField(view, 'mr_iid', 'merge_request_iid', 'number') ??
    (requestPrNumbers?.[0] !== undefined ? String(requestPrNumbers[0]) : undefined);
  if (
    !project ||
    !(/^\d+$/.test(project) || /^[^/\s]+(\/[^/\s]+)+$/.test(project)) ||
    iid === undefined ||
    !/^\d+$/.test(iid)
  )
    return null;
  return { project, iid: Number(iid) };
}

async function gitHostBTarget(run: CallbackRun, deps: CallbackProcessorDeps): Promise<SummaryTarget> {
  const { app, processor } = run;
  const view = (processor.git_host_b_view_data as Record<string, unknown> | undefined) ?? {};
  const target = mergeRequestTarget(view, app.selected_repository, (await startRequestOf(run, deps))?.pr_number);
  if (!target)
    throw targetMissing(
      'no merge request to comment on: the start has no group/project selected_repository and pr_number, nor does git_host_b_view_data name one (project_id, mr_iid)',
    );
  const inline = processor.inline_mr_comment === true;
  const discussion = viewField(view, 'discussion_id');
  if (inline && (!discussion || !/^[0-9a-f]+$/i.test(discussion)))
    throw targetMissing(
      'inline_mr_comment is set but git_host_b_view_data names no discussion (discussion_id) to reply in',
    );
  const token = (await storedSecrets(app, deps)).GIT_HOST_B_TOKEN;
  if (!token) throw targetMissing('no git_host_b token: store one with POST /api/v1/secrets/git-providers');
  const mr = `${deps.hosts.gitHostBApiUrl}/projects/${encodeURIComponent(target.project)}/merge_requests/${target.iid}`;
  return restTarget({
    host: 'git host B',
    name: `${target.project}!${target.iid}${inline ? ` (discussion ${discussion})` : ''}`,
    headers: { Authorization: `Bearer ${token}` },
    listUrl: inline ? `${mr}/discussions/${discussion}` : `${mr}/notes?sort=desc&order_by=created_at&per_page=100`,
    signal: run.signal,
    postUrl: inline ? `${mr}/discussions/${discussion}/notes` : `${mr}/notes`,
    postBody: (text, conversationId) => ({ body: `${text}\n\n${commentMarker(conversationId)}` }),
    // A discussion answers {notes: [...]}; the notes of a merge request, the list itself.
    holds: (listed, conversationId) =>
      anyMarked(inline ? (listed as { notes?: unknown } | null)?.notes : listed, conversationId, (n) => n.body),
    secrets: [token],
  });
}

export const gitHostBV1Processor: CallbackProcessorImpl<'GitHostBV1CallbackProcessor'> = {
  kind: 'GitHostBV1CallbackProcessor',
  process: (run, deps) => postSummaryOnce(run, deps, () => gitHostBTarget(run, deps)),
};
