/**
 * IssueTrackerBV1CallbackProcessor: when the agent finishes, its summary as a comment on the issue
 * (`issue_key`) of a self-hosted issue tracker B server (`base_api_url`, which must be under one of the
 * origins the operator allows, ISSUE_TRACKER_B_ORIGINS: the worker posts nowhere else), with the personal
 * access token the user stored as the secret ISSUE_TRACKER_B_TOKEN. `workspace_name` names the server
 * in records.
 */
import { issueTrackerBServerRefusal } from '../../src/app-conversations/issue-tracker-b-servers';
import type { CallbackProcessorDeps, CallbackProcessorImpl, CallbackRun } from './processor';
import { issueCommentTarget } from './issue-comments';
import { postSummaryOnce, targetMissing, storedSecrets, type SummaryTarget } from './summary-post';

/** The stored secret that holds the user's token on the server. */
export const ISSUE_TRACKER_B_TOKEN_SECRET = 'ISSUE_TRACKER_B_TOKEN';

async function issueTrackerBTarget(run: CallbackRun, deps: CallbackProcessorDeps): Promise<SummaryTarget> {
  const { processor } = run;
  const base = String(processor.base_api_url).replace(/\/+$/, '');
  const refused = issueTrackerBServerRefusal(base, deps.hosts.issueTrackerBOrigins);
  if (refused) throw targetMissing(refused);
  const token = (await storedSecrets(run.app, deps))[ISSUE_TRACKER_B_TOKEN_SECRET];
  if (!token)
    throw targetMissing(
      `no token for issue tracker B (${String(processor.workspace_name)}): store it as the secret ${ISSUE_TRACKER_B_TOKEN_SECRET} (POST /api/v1/secrets)`,
    );
  return issueCommentTarget({
    host: `issue tracker B (${String(processor.workspace_name)})`,
    apiBase: base,
    issueKey: String(processor.issue_key),
    authorization: `Bearer ${token}`,
    secrets: [token],
    signal: run.signal,
  });
}

export const issueTrackerBV1Processor: CallbackProcessorImpl<'IssueTrackerBV1CallbackProcessor'> = {
  kind: 'IssueTrackerBV1CallbackProcessor',
  process: (run, deps) => postSummaryOnce(run, deps, () => issueTrackerBTarget(run, deps)),
};
