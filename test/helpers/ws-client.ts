/** A websocket client that records every message and the close code, for assertions. */
import WebSocket from 'ws';

export interface Recorder {
  ws: WebSocket;
  messages: any[];
  closed: Promise<{ code: number; reason: string }>;
  opened: Promise<void>;
  /** Resolves once `n` messages arrived (or rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<any[]>;
}

export function connect(url: string, headers: Record<string, string> = {}): Recorder {
  const ws = new WebSocket(url, { headers });
  const messages: any[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  ws.on('message', (data) => {
    messages.push(JSON.parse(data.toString()));
    for (const w of waiters.filter((w) => messages.length >= w.n)) w.resolve();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    ws,
    messages,
    closed,
    opened,
    waitFor(n, timeoutMs = 15_000) {
      if (messages.length >= n) return Promise.resolve(messages);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`got ${messages.length} of ${n} messages`)), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve(messages);
          },
        });
      });
    },
  };
}
