/**
 * One websocket connection as a pull queue, for the event tail: bounded while its reader lags, every
 * socket error handled, ended when the service goes silent.
 */
import WebSocket from 'ws';

type Next = { done: false; event: unknown } | { done: true; reason: string };

/** What a socket may hold unread before it is paused: messages, and their bytes. */
const QUEUE_MAX = { messages: 1000, bytes: 8 << 20 };

/**
 * One websocket connection as a pull queue; paused while its reader lags, every error handled, and ended
 * when the service goes silent (no ping or message within `livenessMs`: a half-open connection).
 */
export class SocketQueue {
  private readonly ws: WebSocket;
  private readonly queue: { event: unknown; bytes: number }[] = [];
  private queuedBytes = 0;
  private ended: string | undefined;
  private wake: (() => void) | undefined;
  private openedAt: number | undefined;
  private silence: NodeJS.Timeout | undefined;
  closeCode: number | undefined;

  constructor(
    url: string,
    apiKey: string,
    private readonly livenessMs: number,
    private readonly signal?: AbortSignal,
  ) {
    this.ws = new WebSocket(url, {
      headers: { 'X-Access-Token': apiKey },
      handshakeTimeout: 10_000,
      maxPayload: 16 << 20,
    });
    this.ws.on('open', () => {
      this.openedAt = Date.now();
      this.heard();
    });
    this.ws.on('ping', () => this.heard());
    this.ws.on('message', (data: Buffer) => {
      this.heard();
      try {
        this.queue.push({ event: JSON.parse(data.toString('utf8')), bytes: data.length });
      } catch {
        this.end('a message was not JSON');
        return;
      }
      this.queuedBytes += data.length;
      if (this.queue.length >= QUEUE_MAX.messages || this.queuedBytes >= QUEUE_MAX.bytes) this.ws.pause();
      this.poke();
    });
    this.ws.on('unexpected-response', (_req, res) => {
      this.closeCode =
        res.statusCode === 401 || res.statusCode === 403 ? 4001 : res.statusCode === 404 ? 4004 : undefined;
      this.end(`the upgrade answered ${res.statusCode}`);
      res.resume();
      this.ws.terminate();
    });
    this.ws.on('error', (err) => this.end(err.message));
    this.ws.on('close', (code, why) => {
      this.closeCode ??= code;
      this.end(`closed ${code}${why.length ? ` ${why.toString()}` : ''}`);
    });
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = () => this.end('aborted');

  /** How long the connection has been open (0 if it never opened). */
  openForMs(): number {
    return this.openedAt === undefined ? 0 : Date.now() - this.openedAt;
  }

  /** The service spoke: the silence bound starts again. */
  private heard() {
    clearTimeout(this.silence);
    if (this.ended !== undefined) return; // over: no timer left behind (a ping after an abort)
    this.silence = setTimeout(() => {
      if (this.ws.isPaused) return this.heard(); // our reader lags, not the service: nothing read, no ping seen
      this.end(`no ping or message from the service for ${this.livenessMs} ms`);
      this.ws.terminate();
    }, this.livenessMs);
  }

  private end(reason: string) {
    this.ended ??= reason;
    clearTimeout(this.silence);
    this.poke();
  }

  private poke() {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  async next(): Promise<Next> {
    for (;;) {
      const head = this.queue.shift();
      if (head) {
        this.queuedBytes -= head.bytes;
        if (this.ws.isPaused && this.queue.length < QUEUE_MAX.messages / 10 && this.queuedBytes < QUEUE_MAX.bytes / 8)
          this.ws.resume();
        return { done: false, event: head.event };
      }
      if (this.ended !== undefined) return { done: true, reason: this.ended };
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  close() {
    clearTimeout(this.silence);
    this.signal?.removeEventListener('abort', this.onAbort);
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
  }
}
