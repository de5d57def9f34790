/**
 * A loopback stand-in for a remote runtime API: `POST /start`, `GET /sessions/{session_id}`,
 * `POST /pause`, `/resume`, `/stop` with `{runtime_id}`, every request authenticated by `X-API-Key`
 * (401 otherwise). Sessions live in memory; every request is recorded for the tests' assertions.
 */
import http from 'node:http';
import { LoopbackServer } from './loopback-server';

export interface RemoteSession {
  session_id: string;
  runtime_id: string;
  url: string;
  session_api_key: string | null;
  status: 'running' | 'paused' | 'stopped';
}

export class RemoteRuntimeStandIn extends LoopbackServer {
  readonly requests: { method: string; path: string; body: any; apiKey: string | undefined }[] = [];
  readonly sessions = new Map<string, RemoteSession>();
  private next = 1;
  /** Whether /start issues a session key of its own (some deployments leave the key to the caller: null). */
  issueKeys = true;

  constructor(private readonly apiKey: string) {
    super();
  }

  private byRuntime(id: string): RemoteSession | undefined {
    return [...this.sessions.values()].find((s) => s.runtime_id === id);
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await this.readJson(req);
    const apiKey = req.headers['x-api-key'] as string | undefined;
    const path = req.url!;
    this.requests.push({ method: req.method!, path, body, apiKey });
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (apiKey !== this.apiKey) return json(401, { detail: 'invalid API key' });
    let m: RegExpMatchArray | null;
    if (req.method === 'GET' && (m = path.match(/^\/sessions\/(.+)$/))) {
      const s = this.sessions.get(decodeURIComponent(m[1]!));
      return s ? json(200, s) : json(404, { detail: 'no such session' });
    }
    if (req.method === 'POST' && path === '/start') {
      const n = this.next++;
      const s: RemoteSession = {
        session_id: body.session_id,
        runtime_id: `rt-${n}`,
        url: `https://rt-${n}.runtimes.example`,
        session_api_key: this.issueKeys ? `remote-issued-key-${n}` : null,
        status: 'running',
      };
      this.sessions.set(s.session_id, s);
      return json(201, s);
    }
    const s = body?.runtime_id === undefined ? undefined : this.byRuntime(body.runtime_id);
    const transitions: Record<string, RemoteSession['status']> = {
      '/pause': 'paused',
      '/resume': 'running',
      '/stop': 'stopped',
    };
    if (req.method === 'POST' && transitions[path]) {
      if (!s) return json(404, { detail: 'no such runtime' });
      s.status = transitions[path]!;
      return json(200, { runtime_id: s.runtime_id, status: s.status });
    }
    json(404, { detail: `no route ${req.method} ${path}` });
  }
}
