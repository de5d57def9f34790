/** Raw bytes on the api's HTTP port, for tests of what a client library would never send, and reading the answer. */
import net from 'node:net';

/** Sends raw bytes on a new connection and collects everything the server writes until it closes. */
export function raw(
  url: string,
  bytes: string | Buffer,
  opts: { timeoutMs?: number; keepSending?: () => Buffer | null } = {},
): Promise<{ text: string; closedBy: 'server' | 'timeout'; ms: number }> {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    let text = '';
    const done = (closedBy: 'server' | 'timeout') => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedBy, ms: Date.now() - started });
    };
    const timer = setTimeout(() => done('timeout'), opts.timeoutMs ?? 10_000);
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', () => undefined); // a reset after the answer is the server closing
    socket.on('close', () => done('server'));
    socket.write(bytes);
  });
}

/** The body of an HTTP/1.1 answer as `raw` read it. */
export const bodyOf = (httpText: string) => httpText.slice(httpText.indexOf('\r\n\r\n') + 4);
/** The status of an HTTP/1.1 answer as `raw` read it. */
export const statusOf = (httpText: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(httpText)?.[1]);
