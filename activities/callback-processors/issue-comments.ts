/**
 * A comment on an issue of issue tracker A or B: both speak the same REST API
 * (`/rest/api/2/issue/{issueKey}/comment`). The comment carries a property naming its conversation, so a
 * retry finds it among the issue's latest comments (asked for with `expand=properties`) without any
 * marker in the text people read.
 */
import { restTarget, type SummaryTarget } from './summary-post';

/** The comment property a post carries. */
export const COMMENT_PROPERTY = 'agent-control';

/** An issue key as both trackers write it: a project key, a dash, a number. */
export const ISSUE_KEY = /^[A-Z][A-Z0-9_]*-\d+$/;

export function issueCommentTarget(o: { host: string; apiBase: string; issueKey: string; authorization: string; secrets: string[]; signal?: AbortSignal }): SummaryTarget {
  const comments = `${o.apiBase}/rest/api/2/issue/${encodeURIComponent(o.issueKey)}/comment`;
  return restTarget({
    host: o.host,
    name: o.issueKey,
    headers: { Authorization: o.authorization },
    listUrl: `${comments}?orderBy=-created&maxResults=100&expand=properties`,
    postUrl: comments,
    postBody: (text, conversationId) => ({ body: text, properties: [{ key: COMMENT_PROPERTY, value: { conversation_id: conversationId } }] }),
    holds: (listed, conversationId) => {
      const all = (listed as { comments?: unknown } | null)?.comments;
      return (
        Array.isArray(all) &&
        all.some((c: { properties?: unknown }) =>
          Array.isArray(c?.properties) && c.properties.some((p: { key?: unknown; value?: { conversation_id?: unknown } }) => p?.key === COMMENT_PROPERTY && p.value?.conversation_id === conversationId),
        )
      );
    },
    secrets: o.secrets,
    signal: o.signal,
  });
}
