/**
 * A private git host on loopback for start tests: HTTPS (a self-signed certificate made for the run) in
 * front of `git http-backend`, serving the bare repositories under `root` as `/<owner>/<repo>.git`, and
 * refusing every request (401 with a Basic challenge) whose password is not the token. A start adds
 * its token only to https URLs, hence HTTPS; the sandbox's git trusts the certificate through
 * GIT_SSL_CAINFO. Without a token it is a public host instead: plain HTTP, every request answered.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { trustedPath, trustedProgram } from '../../src/process/trusted-path';

export interface GitRequest {
  method: string;
  url: string;
  authorized: boolean;
}

export class GitHttpsServer {
  private server!: https.Server | http.Server;
  url = '';
  /** The certificate's file, for GIT_SSL_CAINFO. */
  certFile = '';
  readonly requests: GitRequest[] = [];

  constructor(
    private readonly root: string,
    /** The password every request must carry; null: a public repository (plain HTTP, no authentication). */
    private readonly token: string | null,
    /** Where it listens: a sandbox in a container reaches the host on its bridge's address. */
    private readonly host = '127.0.0.1',
  ) {}

  async start(): Promise<this> {
    if (this.token === null) {
      this.server = http.createServer((req, res) => this.handle(req, res));
    } else {
      const tlsDir = path.join(this.root, '.tls');
      fs.mkdirSync(tlsDir, { recursive: true });
      const keyFile = path.join(tlsDir, 'key.pem');
      this.certFile = path.join(tlsDir, 'cert.pem');
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          keyFile,
          '-out',
          this.certFile,
          '-days',
          '1',
          '-subj',
          `/CN=${this.host}`,
          '-addext',
          `subjectAltName=IP:${this.host}`,
        ],
        { stdio: 'ignore' },
      );
      this.server = https.createServer(
        { key: fs.readFileSync(keyFile), cert: fs.readFileSync(this.certFile) },
        (req, res) => this.handle(req, res),
      );
    }
    await new Promise<void>((r) => this.server.listen(0, this.host, () => r()));
    this.url = `${this.token === null ? 'http' : 'https'}://${this.host}:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /**
   * Writes a sandbox specs file (SANDBOX_SPECS_FILE) at `file` whose built-in spec's git trusts this run's
   * certificate; nothing else about the built-in spec changes. Answers `file`.
   */
  writeTrustingSpecs(file: string): string {
    fs.writeFileSync(
      file,
      JSON.stringify([
        {
          id: 'local-process',
          provider: 'process',
          working_dir: 'workspace',
          initial_env: { GIT_SSL_CAINFO: this.certFile },
        },
      ]),
    );
    return file;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const auth = req.headers.authorization ?? '';
    const m = /^Basic (.+)$/.exec(auth);
    const password = m ? Buffer.from(m[1]!, 'base64').toString('utf8').split(':').slice(1).join(':') : undefined;
    const authorized = this.token === null || password === this.token;
    this.requests.push({ method: req.method ?? '', url: req.url ?? '', authorized });
    if (!authorized) {
      req.resume();
      res
        .writeHead(401, { 'WWW-Authenticate': 'Basic realm="private"', 'Content-Type': 'text/plain' })
        .end('token required\n');
      return;
    }
    const u = new URL(req.url ?? '/', 'https://x');
    // The host's git, as a git host would run it (a test may have put a PATH of its own on this process).
    const cgi = spawn(trustedProgram('git'), ['http-backend'], {
      env: {
        PATH: trustedPath(),
        GIT_PROJECT_ROOT: this.root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: decodeURIComponent(u.pathname),
        QUERY_STRING: u.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
        REMOTE_USER: 'token',
        REMOTE_ADDR: '127.0.0.1',
      },
    });
    req.pipe(cgi.stdin);
    cgi.stdin.on('error', () => undefined);
    let head = Buffer.alloc(0);
    let started = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (started) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      started = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const i = line.indexOf(':');
        const name = line.slice(0, i).trim();
        const value = line.slice(i + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => {
      if (!started) res.writeHead(500).end();
      else res.end();
    });
    cgi.on('error', () => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  }
}
