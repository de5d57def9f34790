/**
 * GitHostCV1CallbackProcessor: when the agent finishes, its summary as a comment on the pull request the
 * start came from, through git host C's REST API (GIT_HOST_C_API_URL,
 * `/repositories/{workspace}/{repo_slug}/pullrequests/{id}/comments`, content in `content.raw`). The
 * token is the user's stored git_host_c provider token (GIT_HOST_C_TOKEN): an access token, or
 * `username:app_password` sent as basic credentials.
 */
import { pullRequestTarget, startRequestOf } from './git-host-a-v1-processor';
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

async function gitHostCTarget(run: CallbackRun, deps: CallbackProcessorDeps): Promise<SummaryTarget> {
  const { app, processor } = run;
  const view = (processor.git_host_c_view_data as Record<string, unknown> | undefined) ?? {};
  const prId = viewField(view, 'pr_id', 'pull_request_id');
  const target = pullRequestTarget(
    prId ? { ...view, pr_number: prId } : view,
    app.selected_repository,
    (await startRequestOf(run, deps))?.pr_number,
  );
  if (!target)
    throw targetMissing(
      'no pull request to comment on: the start has no workspace/repo selected_repository and pr_number, nor does git_host_c_view_data name one',
    );
  const token = (await storedSecrets(app, deps)).GIT_HOST_C_TOKEN;
  if (!token) throw targetMissing('no git_host_c token: store one with POST /api/v1/secrets/git-providers');
  const authorization = token.includes(':') ? `Basic ${Buffer.from(token).toString('base64')}` : `Bearer ${token}`;
  const comments = `${deps.hosts.gitHostCApiUrl}/repositories/${target.repo}/pullrequests/${target.number}/comments`;
  return restTarget({
    host: 'git host C',
    name: `${target.repo}#${target.number}`,
    headers: { Authorization: authorization },
    listUrl: `${comments}?pagelen=100&sort=-created_on`,
    signal: run.signal,
    postUrl: comments,
    postBody: (text, conversationId) => ({ content: { raw: `${text}\n\n${commentMarker(conversationId)}` } }),
    holds: (listed, conversationId) =>
      anyMarked(
        (listed as { values?: unknown } | null)?.values,
        conversationId,
        (c) => (c.content as { raw?: unknown } | undefined)?.raw,
      ),
    secrets: [token, authorization.slice(authorization.indexOf(' ') + 1)],
  });
}

export const gitHostCV1Processor: CallbackProcessorImpl<'GitHostCV1CallbackProcessor'> = {
  kind: 'GitHostCV1CallbackProcessor',
  process: (run, deps) => postSummaryOnce(run, deps, () => gitHostCTarget(run, deps)),
};
