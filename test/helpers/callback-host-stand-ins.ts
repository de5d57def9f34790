/**
 * Loopback stand-ins for the hosts the callback processors post to, each speaking its real API as far as
 * the processor uses it: git host B's merge request notes and discussions, git host C's pull request
 * comments, issue trackers A and B's issue comments (with comment properties), and the chat service's
 * `chat.postMessage` / `conversations.replies` (with message metadata, `ok: false` for refusals).
 * Each keeps what was posted where, with the credential it came with. `failNext` answers the next posts
 * 500 (a flaky host), `refuseWith` answers every post so, and `hold()` keeps the next post's answer
 * back (the post is stored) until released: a worker can die waiting for it.
 */
import http from 'node:http';
import { LoopbackServer } from './loopback-server';

export interface HostPost {
  /** Where it went: "group/project!7", "PROJ-1", "C123/1700000000.000100", ... */
  place: string;
  /** The body as sent. */
  body: any;
  authorization: string | undefined;
}

type Route = { place: string; op: 'list' | 'post' };

abstract class CommentHostStandIn extends LoopbackServer {
  readonly posts: HostPost[] = [];
  postRequests = 0;
  failNext = 0;
  refuseWith: number | null = null;
  private held: { stored: () => void; release: Promise<void> } | null = null;

  /** Keeps the next post's answer back once it is stored; `stored` resolves then; `release()` answers it. */
  hold(): { stored: Promise<void>; release: () => void } {
    let stored!: () => void;
    let release!: () => void;
    const storedP = new Promise<void>((r) => (stored = r));
    this.held = { stored, release: new Promise<void>((r) => (release = r)) };
    return { stored: storedP, release };
  }

  protected abstract route(method: string, url: URL, body: any): Route | null;
  /** The answer to a listing of `place`, in the host's shape. */
  protected abstract listing(place: string, posts: HostPost[]): unknown;
  /** The answer to a post, in the host's shape. */
  protected abstract posted(post: HostPost, id: number): unknown;
  /** A refusal in the host's shape (the chat service answers 200 with ok: false); it echoes the credential, as careless hosts do. */
  protected refusal(status: number, authorization?: string): { status: number; body: unknown } {
    return { status, body: { message: status >= 500 ? 'try again' : 'refused', authorization } };
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const answer = (status: number, json: unknown) =>
      void res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(json));
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const body = await this.readJson(req);
    const r = this.route(req.method ?? 'GET', url, body);
    if (!r) return answer(404, { message: 'Not Found' });
    if (r.op === 'list')
      return answer(
        200,
        this.listing(
          r.place,
          this.posts.filter((p) => p.place === r.place),
        ),
      );
    this.postRequests++;
    const refused = this.refuseWith ?? (this.failNext > 0 ? (this.failNext--, 500) : null);
    if (refused !== null) {
      const f = this.refusal(refused, req.headers.authorization);
      return answer(f.status, f.body);
    }
    const post = { place: r.place, body, authorization: req.headers.authorization };
    this.posts.push(post);
    const held = this.held;
    if (held) {
      this.held = null;
      held.stored();
      await held.release;
    }
    answer(201, this.posted(post, this.posts.length));
  }
}

/** Git host B: `/projects/:id/merge_requests/:iid/notes` and `.../discussions/:discussion_id(/notes)`. */
export class GitHostBStandIn extends CommentHostStandIn {
  protected route(method: string, url: URL): Route | null {
    const notes = /^\/api\/v4\/projects\/([^/]+)\/merge_requests\/(\d+)\/notes$/.exec(url.pathname);
    if (notes)
      return { place: `${decodeURIComponent(notes[1]!)}!${notes[2]}`, op: method === 'POST' ? 'post' : 'list' };
    const discussion = /^\/api\/v4\/projects\/([^/]+)\/merge_requests\/(\d+)\/discussions\/([0-9a-f]+)(\/notes)?$/.exec(
      url.pathname,
    );
    if (!discussion) return null;
    const place = `${decodeURIComponent(discussion[1]!)}!${discussion[2]}#${discussion[3]}`;
    return discussion[4]
      ? method === 'POST'
        ? { place, op: 'post' }
        : null
      : method === 'GET'
        ? { place, op: 'list' }
        : null;
  }
  protected listing(place: string, posts: HostPost[]) {
    const notes = posts.map((p, i) => ({ id: i + 1, body: p.body.body }));
    return place.includes('#') ? { id: place.split('#')[1], notes } : notes.reverse();
  }
  protected posted(post: HostPost, id: number) {
    return { id, body: post.body.body };
  }
}

/** Git host C: `/2.0/repositories/{workspace}/{repo_slug}/pullrequests/{id}/comments`. */
export class GitHostCStandIn extends CommentHostStandIn {
  protected route(method: string, url: URL): Route | null {
    const m = /^\/2\.0\/repositories\/([^/]+\/[^/]+)\/pullrequests\/(\d+)\/comments$/.exec(url.pathname);
    return m ? { place: `${m[1]}#${m[2]}`, op: method === 'POST' ? 'post' : 'list' } : null;
  }
  protected listing(_place: string, posts: HostPost[]) {
    return {
      pagelen: 100,
      values: posts.map((p, i) => ({ id: i + 1, content: { raw: p.body.content?.raw } })).reverse(),
    };
  }
  protected posted(post: HostPost, id: number) {
    return { id, content: post.body.content };
  }
}

/** Issue trackers A (under `/ex/jira/{cloud id}`) and B: `/rest/api/2/issue/{key}/comment`. */
export class IssueTrackerStandIn extends CommentHostStandIn {
  protected route(method: string, url: URL): Route | null {
    const m = /^(?:\/ex\/jira\/([A-Za-z0-9-]+))?\/rest\/api\/2\/issue\/([A-Z][A-Z0-9_]*-\d+)\/comment$/.exec(
      url.pathname,
    );
    return m ? { place: m[1] ? `${m[1]}/${m[2]}` : m[2]!, op: method === 'POST' ? 'post' : 'list' } : null;
  }
  protected listing(_place: string, posts: HostPost[]) {
    return {
      startAt: 0,
      maxResults: 100,
      total: posts.length,
      comments: posts
        .map((p, i) => ({ id: String(i + 1), body: p.body.body, properties: p.body.properties ?? [] }))
        .reverse(),
    };
  }
  protected posted(post: HostPost, id: number) {
    return { id: String(id), body: post.body.body };
  }
}

/** The chat service's Web API: `chat.postMessage` and `conversations.replies`, errors as `ok: false`. */
export class ChatStandIn extends CommentHostStandIn {
  /** The error a refused post answers with (HTTP 200). */
  refusalError = 'channel_not_found';
  protected route(method: string, url: URL, body: any): Route | null {
    if (method === 'POST' && url.pathname === '/api/chat.postMessage')
      return { place: `${body?.channel}/${body?.thread_ts}`, op: 'post' };
    if (method === 'GET' && url.pathname === '/api/conversations.replies')
      return { place: `${url.searchParams.get('channel')}/${url.searchParams.get('ts')}`, op: 'list' };
    return null;
  }
  protected listing(_place: string, posts: HostPost[]) {
    return {
      ok: true,
      messages: posts.map((p) => ({
        ts: '1',
        text: p.body.text,
        ...(p.body.metadata ? { metadata: p.body.metadata } : {}),
      })),
    };
  }
  protected posted(post: HostPost) {
    return { ok: true, channel: post.body.channel, ts: '1700000001.000200', message: { text: post.body.text } };
  }
  protected override refusal(status: number, authorization?: string) {
    return {
      status: 200,
      body: { ok: false, error: status >= 500 ? 'service_unavailable' : this.refusalError, authorization },
    };
  }
}
