/**
 * A comment on an issue of issue tracker A or B: both speak the same REST API
 * (`/rest/api/2/issue/{issueKey}/comment`). The comment carries a property naming its conversation and
 * ends with a line naming it, so a retry finds it among the issue's latest comments (by the property
 * where the listing expands it, else by that line).
 */
import { restTarget, type SummaryTarget } from './summary-post';

/** The comment property a post carries. */
export const COMMENT_PROPERTY = 'agent-control';

/** The last line of the comment: what a listing that does not carry properties still shows. */
export const issueMarker = (conversationId: string) => `(agent-control conversation ${conversationId})`;

/** An issue key as both trackers write it: a project key, a dash, a number. */
export const ISSUE_KEY = /^[A-Z][A-Z0-9_]*-\d+$/;

export function issueCommentTarget(o: {
  host: string;
  apiBase: string;
  issueKey: string;
  authorization: string;
  secrets: string[];
  signal?: AbortSignal;
}): SummaryTarget {
  const comments = `${o.apiBase}/rest/api/2/issue/${encodeURIComponent(o.issueKey)}/comment`;
  return restTarget({
    host: o.host,
    name: o.issueKey,
    headers: { Authorization: o.authorization },
    listUrl: `${comments}?orderBy=-created&maxResults=100&expand=properties`,
    postUrl: comments,
    postBody: (text, conversationId) => ({
      body: `${text}\n\n${issueMarker(conversationId)}`,
      properties: [{ key: COMMENT_PROPERTY, value: { conversation_id: conversationId } }],
    }),
    // The property where the listing carries it; the last line of the text where it does not.
    holds: (listed, conversationId) => {
      const all = (listed as { comments?: unknown } | null)?.comments;
      return (
        Array.isArray(all) &&
        all.some(
          (c: { body?: unknown; properties?: unknown }) =>
            (typeof c?.body === 'string' && c.body.includes(issueMarker(conversationId))) ||
            (Array.isArray(c?.properties) &&
              c.properties.some(
                (p: { key?: unknown; value?: { conversation_id?: unknown } }) =>
                  p?.key === COMMENT_PROPERTY && p.value?.conversation_id === conversationId,
              )),
        )
      );
    },
    secrets: o.secrets,
    signal: o.signal,
  });
}
