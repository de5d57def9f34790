/**
 * The self-hosted issue tracker B servers a callback may post to: a user names one in a processor
 * (`base_api_url`), so it must be one the operator allows (ISSUE_TRACKER_B_ORIGINS), or the worker would
 * post wherever a user says (the database, the workflow service, a metadata endpoint).
 */

/** Why `baseApiUrl` may not be posted to, or null when it is under an allowed origin. */
export function issueTrackerBServerRefusal(baseApiUrl: string, origins: readonly string[]): string | null {
  if (!URL.canParse(baseApiUrl))
    return `base_api_url ${JSON.stringify(baseApiUrl.slice(0, 200))} is not an absolute URL`;
  // An empty query or fragment (`...?`, `...#`) parses as none, and an encoded slash or dot step moves
  // the path the comment API is appended to: refused as written.
  if (/[?#\\]|%2f|%5c|%2e/i.test(baseApiUrl))
    return 'base_api_url may carry no query, fragment, backslash or encoded slash or dot';
  const url = new URL(baseApiUrl);
  if (url.username || url.password || url.search || url.hash)
    return 'base_api_url may carry no credentials, query or fragment';
  if (!origins.includes(url.origin)) {
    return origins.length === 0
      ? 'no issue tracker B server is allowed on this service (its operator sets ISSUE_TRACKER_B_ORIGINS)'
      : `base_api_url ${url.origin} is not among the issue tracker B servers this service posts to (ISSUE_TRACKER_B_ORIGINS: ${origins.join(', ')})`;
  }
  return null;
}
