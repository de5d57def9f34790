/**
 * IssueTrackerAV1CallbackProcessor: when the agent finishes, its summary as a comment on the issue
 * (`issue_key`) of issue tracker A's cloud site (`issue_tracker_a_cloud_id`), through the site's API
 * gateway (ISSUE_TRACKER_A_API_URL, `/ex/jira/{cloud id}/rest/api/2/...`), as the service account
 * `svc_acc_email` with the API key the user stored as the secret ISSUE_TRACKER_A_API_KEY (never in the
 * request: the published `decrypted_api_key` is refused).
 */
import type { CallbackProcessorDeps, CallbackProcessorImpl, CallbackRun } from './processor';
import { issueCommentTarget } from './issue-comments';
import { postSummaryOnce, targetMissing, storedSecrets, type SummaryTarget } from './summary-post';

/** The stored secret that holds the service account's API key. */
export const ISSUE_TRACKER_A_KEY_SECRET = 'ISSUE_TRACKER_A_API_KEY';

async function issueTrackerATarget(run: CallbackRun, deps: CallbackProcessorDeps): Promise<SummaryTarget> {
  const { processor } = run;
  const email = String(processor.svc_acc_email);
  const key = (await storedSecrets(run.app, deps))[ISSUE_TRACKER_A_KEY_SECRET];
  if (!key)
    throw targetMissing(
      `no API key for issue tracker A: store it as the secret ${ISSUE_TRACKER_A_KEY_SECRET} (POST /api/v1/secrets)`,
    );
  const basic = Buffer.from(`${email}:${key}`).toString('base64');
  return issueCommentTarget({
    host: 'issue tracker A',
    apiBase: `${deps.hosts.issueTrackerAApiUrl}/ex/jira/${encodeURIComponent(String(processor.issue_tracker_a_cloud_id))}`,
    issueKey: String(processor.issue_key),
    authorization: `Basic ${basic}`,
    secrets: [key, basic],
    signal: run.signal,
  });
}

export const issueTrackerAV1Processor: CallbackProcessorImpl<'IssueTrackerAV1CallbackProcessor'> = {
  kind: 'IssueTrackerAV1CallbackProcessor',
  process: (run, deps) => postSummaryOnce(run, deps, () => issueTrackerATarget(run, deps)),
};
