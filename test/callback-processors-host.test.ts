/**
 * The host callback processors' pure parts, without servers: when the agent finished, its summary, the pull
 * or merge request to post on, host refusals and what they echo, the chat service's answers, Link headers,
 * and the allowed issue tracker B servers.
 */
import { hasNextLink } from '../src/git/git-host-http';
import { chatFailure } from '../activities/callback-processors/chat-v1-processor';
import { pullRequestTarget } from '../activities/callback-processors/git-host-a-v1-processor';
import { mergeRequestTarget } from '../activities/callback-processors/git-host-b-v1-processor';
import {
  commentMarker,
  hostFailure,
  isFinished,
  linkNext,
  MAX_SUMMARY_CHARS,
  postable,
  summaryOf,
  summaryText,
  viewField,
} from '../activities/callback-processors/summary-post';
import { issueTrackerBServerRefusal } from '../src/app-conversations/issue-tracker-b-servers';
import { finish, message, state } from './helpers/callback-events';

describe('the host processors: their pure parts', () => {
  it('is finished only on execution_status finished', () => {
    expect(isFinished([state('execution_status', 'running')])).toBe(false);
    expect(isFinished([state('other', 'finished')])).toBe(false);
    expect(isFinished([message('agent', 'done'), state('execution_status', 'finished')])).toBe(true);
  });

  it('summarises by the last finish message, else the last agent message', () => {
    expect(summaryOf([message('agent', 'first'), finish('did it'), message('user', 'thanks')])).toBe('did it');
    expect(summaryOf([finish('old'), message('agent', 'line 1', 'line 2')])).toBe('line 1\nline 2');
    expect(summaryOf([message('user', 'hi')])).toBeNull();
  });

  it('finds the pull request in the view data, else in the start', () => {
    expect(pullRequestTarget({ repo: 'acme/widgets', pr_number: 7 }, 'other/repo', [9])).toEqual({
      repo: 'acme/widgets',
      number: 7,
    });
    expect(pullRequestTarget({ full_name: 'acme/gadgets', number: 3 }, null)).toEqual({
      repo: 'acme/gadgets',
      number: 3,
    });
    expect(pullRequestTarget({}, 'acme/widgets', [9, 10])).toEqual({ repo: 'acme/widgets', number: 9 });
  });

  it('names no pull request without an owner/repo and a number', () => {
    expect(pullRequestTarget({}, 'acme/widgets', [])).toBeNull();
    expect(pullRequestTarget({ pr_number: 1 }, 'https://git.example/acme/widgets')).toBeNull();
    expect(pullRequestTarget({ pr_number: 1 }, '/local/path')).toBeNull();
    expect(pullRequestTarget({ pr_number: 1 }, null)).toBeNull();
    expect(pullRequestTarget({ repo: 'acme/..', pr_number: 1 }, null)).toBeNull();
    expect(pullRequestTarget({ repo: 'acme/w?x=1', pr_number: 1 }, null)).toBeNull();
  });

  it('says the summary, or a plain line without one; git hosts mark the comment for a retry to find', () => {
    expect(summaryText('all green')).toBe('The agent finished:\n\nall green');
    expect(summaryText(null)).toBe('The agent finished.');
    expect(commentMarker('c1')).toBe('<!-- agent-control:conversation=c1 -->');
  });

  it('finds the merge request of git host B by id or path, and its iid', () => {
    expect(mergeRequestTarget({ project_id: 42, mr_iid: 7 }, null)).toEqual({ project: '42', iid: 7 });
    expect(mergeRequestTarget({ full_path: 'group/sub/project', merge_request_iid: '3' }, null)).toEqual({
      project: 'group/sub/project',
      iid: 3,
    });
    expect(mergeRequestTarget({}, 'acme/widgets', [5])).toEqual({ project: 'acme/widgets', iid: 5 });
    expect(mergeRequestTarget({ mr_iid: 'x' }, 'acme/widgets')).toBeNull();
    expect(mergeRequestTarget({ mr_iid: 1 }, 'no-slash')).toBeNull();
    expect(mergeRequestTarget({ project_id: '../../admin', mr_iid: 1 }, null)).toEqual({
      project: '../../admin',
      iid: 1,
    }); // encoded as one path segment
  });

  it('reads view fields as text: strings and finite numbers only', () => {
    expect(viewField({ a: ' x ', b: 2 }, 'a')).toBe('x');
    expect(viewField({ a: '', b: 2 }, 'a', 'b')).toBe('2');
    expect(viewField({ a: { toString: () => 'evil' }, b: Infinity, c: null }, 'a', 'b', 'c')).toBeUndefined();
  });

  it('refuses for good what a host refuses (a redirect, 4xx but 408 and 429), retries the rest, and masks what it echoes of a credential', () => {
    const refused = hostFailure('h', 'the post', 403, 'bad token tok-123 here', ['tok-123']);
    expect(refused).toMatchObject({ nonRetryable: true, message: 'h refused the post (403): bad token *** here' });
    expect(hostFailure('h', 'x', 302, '')).toMatchObject({ nonRetryable: true });
    for (const status of [408, 429, 500, 503])
      expect((hostFailure('h', 'x', status, 'later') as { nonRetryable?: boolean }).nonRetryable).toBeUndefined();
  });

  it("takes the chat service's ok: false as a refusal, but for the errors that pass", () => {
    const answer = (json: unknown) => ({ status: 200, link: null, text: JSON.stringify(json), json: () => json });
    expect(chatFailure(answer({ ok: true }), 'x')).toBeNull();
    expect(chatFailure(answer({ ok: false, error: 'channel_not_found' }), 'x')).toMatchObject({
      nonRetryable: true,
      message: 'the chat service refused x: channel_not_found',
    });
    expect(
      (chatFailure(answer({ ok: false, error: 'ratelimited' }), 'x') as { nonRetryable?: boolean }).nonRetryable,
    ).toBeUndefined();
    expect(chatFailure(answer('not an object'), 'x')).toMatchObject({ nonRetryable: true });
  });

  it("masks every secret value in the agent's summary and cuts it to what every host takes", () => {
    expect(postable('token ghp_abcdef and ghp_abcdef again; key sk-1', ['ghp_abcdef', 'sk-1', 'ab'])).toBe(
      'token *** and *** again; key ***',
    );
    expect(postable('ab stays: too short to mask', ['ab'])).toBe('ab stays: too short to mask');
    expect(postable('x'.repeat(MAX_SUMMARY_CHARS + 5), [])).toBe(
      `${'x'.repeat(MAX_SUMMARY_CHARS)}\n\n(cut at ${MAX_SUMMARY_CHARS} characters)`,
    );
    expect(postable(null, ['x'])).toBeNull();
  });

  it("reads a Link header's next page", () => {
    const a = (link: string | null) => ({ status: 200, link, text: '', json: () => null });
    expect(linkNext(a('<https://h/x?page=2>; rel="next", <https://h/x?page=9>; rel="last"'))).toBe(
      'https://h/x?page=2',
    );
    expect(linkNext(a('<https://h/x?page=1>; rel="prev"'))).toBeNull();
    expect(linkNext(a(null))).toBeNull();
    // One parser (src/git/link-header.ts) for the git searches and the processors: relations among others,
    // any case, unquoted, with other parameters, a comma in the target; not a relation that only starts with next.
    expect(linkNext(a('<https://h/x?page=1>; rel="prev next"'))).toBe('https://h/x?page=1');
    expect(linkNext(a('<https://h/x?page=3>; rel=NEXT'))).toBe('https://h/x?page=3');
    expect(linkNext(a('<https://h/x?page=4>; rel="next"; title="p"'))).toBe('https://h/x?page=4');
    expect(linkNext(a('<https://h/x?a=1,2&page=5>; rel="next"'))).toBe('https://h/x?a=1,2&page=5');
    expect(linkNext(a('<https://h/x?page=6>; rel="nextish"'))).toBeNull();
    expect(linkNext(a('<https://h/x;rel=next>; rel="last"'))).toBeNull();
    expect(hasNextLink('<https://h/x;rel=next>; rel="last"')).toBe(false);
    expect(hasNextLink('<https://h/x?page=2>; rel="next"')).toBe(true);
    // A quoted value is one value, whatever it holds; a bare link without rel is no next page.
    expect(linkNext(a('<https://h/p1>; title="<https://evil/>; rel=next"'))).toBeNull();
    expect(linkNext(a('<https://h/p1>; title="a, <b>; rel=next", <https://h/p2>; rel="next"'))).toBe('https://h/p2');
    expect(linkNext(a('<https://h/p3> ; rel = "last next"'))).toBe('https://h/p3');
    expect(linkNext(a('<https://h/p4>; rel="prev"; rel="next"'))).toBeNull();
    expect(linkNext(a('garbage <https://h/p5>; rel="next"'))).toBeNull();
    // Empty parameters, as some hosts send them, are passed over.
    expect(linkNext(a('<https://h/p6>; rel="next";'))).toBe('https://h/p6');
    expect(linkNext(a('<https://h/p7>; rel=next;; , <https://h/p8>; rel="last"'))).toBe('https://h/p7');
    expect(linkNext(a('<https://h/p9>;; rel="next"'))).toBe('https://h/p9');
    expect(hasNextLink('<https://h/p2>; rel="next";')).toBe(true);
  });

  it('masks a credential the host echoes, also where the answer is cut and in its escaped forms', () => {
    const token = 'tok-"123"';
    const long = `${'x'.repeat(295)}${token} and ${JSON.stringify(token)} and ${encodeURIComponent(token)}`;
    expect(hostFailure('h', 'x', 403, long, [token]).message).not.toMatch(/tok/);
  });

  it('posts to an issue tracker B server only under an allowed origin', () => {
    const allowed = ['https://jira.acme.example'];
    expect(issueTrackerBServerRefusal('https://jira.acme.example/jira', allowed)).toBeNull();
    expect(issueTrackerBServerRefusal('https://jira.acme.example.evil.example', allowed)).toMatch(/not among/);
    expect(issueTrackerBServerRefusal('http://jira.acme.example', allowed)).toMatch(/not among/);
    expect(issueTrackerBServerRefusal('https://user:pw@jira.acme.example', allowed)).toMatch(/no credentials/);
    expect(issueTrackerBServerRefusal('https://jira.acme.example', [])).toMatch(/ISSUE_TRACKER_B_ORIGINS/);
    expect(issueTrackerBServerRefusal('not a url', allowed)).toMatch(/not an absolute URL/);
    // An empty query or fragment parses as none: the comment path would be appended after it.
    for (const sly of [
      'https://jira.acme.example/any/path?',
      'https://jira.acme.example/any#',
      'https://jira.acme.example/a%2F..%2Fb',
      'https://jira.acme.example/a\\b',
    ]) {
      expect(issueTrackerBServerRefusal(sly, allowed)).toMatch(/no query, fragment/);
    }
  });
});
