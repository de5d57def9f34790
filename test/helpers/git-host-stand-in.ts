/**
 * A loopback stand-in for git host A's REST API, as far as the GitHostAV1 callback uses it:
 * `POST /repos/{owner}/{repo}/issues/{number}/comments` with `{body}`, answered 201 with the comment, and
 * `GET` of the same path, the comments posted so far.
 * `failNext` makes the next requests fail with 500 (a flaky host); `refuseWith` answers every one so.
 */
import http from 'node:http';
import { LoopbackServer } from './loopback-server';

export interface PostedComment {
  repo: string;
  number: number;
  body: string;
  authorization: string | undefined;
}

export class GitHostStandIn extends LoopbackServer {
  readonly comments: PostedComment[] = [];
  requests = 0;
  failNext = 0;
  refuseWith: number | null = null;

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.requests++;
    const m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(req.url ?? '');
    const body = await this.readJson(req);
    const answer = (status: number, json: object): void => {
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(json));
    };
    const listing = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments(\?.*)?$/.exec(req.url ?? '');
    if (req.method === 'GET' && listing) {
      return answer(
        200,
        this.comments
          .filter((c) => c.repo === listing[1] && c.number === Number(listing[2]))
          .map((c, i) => ({ id: i + 1, body: c.body })),
      );
    }
    if (req.method !== 'POST' || !m) return answer(404, { message: 'Not Found' });
    if (this.refuseWith) return answer(this.refuseWith, { message: 'refused' });
    if (this.failNext > 0) {
      this.failNext--;
      return answer(500, { message: 'try again' });
    }
    this.comments.push({
      repo: m[1]!,
      number: Number(m[2]),
      body: body.body,
      authorization: req.headers.authorization,
    });
    answer(201, { id: this.comments.length, body: body.body });
  }
}
