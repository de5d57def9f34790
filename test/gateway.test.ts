/**
 * The gateway in front of a scaled api (src/gateway/tcp-gateway.ts), on loopback: two upstreams on
 * 127.0.0.1 and 127.0.0.2 (the same port, as two api containers have), connections taken by each in
 * turn, bytes relayed unchanged both ways, an upstream that is gone passed over, a client refused when
 * none is left or the name does not resolve, and close() ending relayed connections.
 */
import net from 'node:net';
import { freePort } from '../src/process/net';
import { startGateway, type Gateway } from '../src/gateway/tcp-gateway';

/** An upstream that answers each line with `<name>:<line>`. */
function upstream(name: string, host: string, port: number): Promise<net.Server> {
  const server = net.createServer((s) => {
    s.on('error', () => s.destroy());
    s.setEncoding('utf8');
    s.on('data', (d: string) => s.write(`${name}:${d}`));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** Sends `line` through the gateway; the answer, or `closed` when the gateway ended the connection. */
function ask(port: number, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => reject(new Error(`no answer to ${line}`)), 5000);
    s.setEncoding('utf8');
    s.on('connect', () => s.write(line));
    s.on('data', (d: string) => {
      got += d;
      if (got.endsWith('\n')) {
        clearTimeout(timer);
        s.end();
        resolve(got);
      }
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve(got || 'closed');
    });
    s.on('error', () => undefined);
  });
}

describe('the gateway', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });
  const close = (server: net.Server) => new Promise((r) => server.close(r));

  it('relays each connection to the upstream addresses in turn, bytes unchanged, and passes over one that is gone', async () => {
    const port = await freePort();
    const a = await upstream('a', '127.0.0.1', port);
    const b = await upstream('b', '127.0.0.2', port);
    closers.push(() => close(a), () => close(b));
    const refused: string[] = [];
    const gateway: Gateway = await startGateway({
      host: '127.0.0.1',
      port: 0,
      upstreamHost: 'api',
      upstreamPort: port,
      connectTimeoutMs: 1000,
      maxConnections: 100,
      resolve: async () => ['127.0.0.2', '127.0.0.1'],
      onRefused: (r) => refused.push(r),
    });
    closers.push(() => gateway.close());

    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await ask(gateway.port, `hello ${i} \u00e9\n`));
    expect(answers).toEqual(['a:hello 0 \u00e9\n', 'b:hello 1 \u00e9\n', 'a:hello 2 \u00e9\n', 'b:hello 3 \u00e9\n']);
    expect(gateway.relayed()).toEqual(new Map([['127.0.0.1', 2], ['127.0.0.2', 2]]));

    // One upstream gone: every connection goes to the other.
    await close(a);
    for (let i = 0; i < 3; i++) expect(await ask(gateway.port, `again ${i}\n`)).toBe(`b:again ${i}\n`);
    // None left: the client's connection is closed, and the gateway says why.
    await close(b);
    expect(await ask(gateway.port, 'nobody\n')).toBe('closed');
    expect(refused).toEqual([`no address of api:${port} took the connection (127.0.0.1, 127.0.0.2)`]);
  });

  it('closes a client whose upstream name does not resolve, and ends relayed connections when it closes', async () => {
    const port = await freePort();
    const a = await upstream('a', '127.0.0.1', port);
    closers.push(() => close(a));
    const unresolved = await startGateway({ host: '127.0.0.1', port: 0, upstreamHost: 'no-such-host.invalid', upstreamPort: port, connectTimeoutMs: 1000, maxConnections: 10 });
    closers.push(() => unresolved.close());
    expect(await ask(unresolved.port, 'x\n')).toBe('closed');

    const gateway = await startGateway({ host: '127.0.0.1', port: 0, upstreamHost: 'localhost', upstreamPort: port, connectTimeoutMs: 1000, maxConnections: 10, resolve: async () => ['127.0.0.1'] });
    const held = net.connect(gateway.port, '127.0.0.1');
    held.on('error', () => undefined);
    const closed = new Promise((r) => held.on('close', r));
    await new Promise((r) => held.on('connect', r));
    held.write('open\n');
    await new Promise((r) => held.once('data', r));
    await gateway.close();
    await closed;
    expect(held.destroyed).toBe(true);
  });
});
