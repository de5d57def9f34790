/** Base of the tests' stand-ins for outside services: an HTTP server on a free loopback port. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export abstract class LoopbackServer {
  private server!: http.Server;
  url = '';

  protected abstract handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }

  /** The request body parsed as JSON (undefined when empty). */
  protected async readJson(req: http.IncomingMessage): Promise<any> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? JSON.parse(text) : undefined;
  }
}
