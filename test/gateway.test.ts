/**
 * The gateway in front of a scaled api (src/gateway/tcp-gateway.ts), on loopback: upstreams on
 * 127.0.0.x (the same port, as api containers have), connections taken by each healthy one in turn,
 * bytes relayed unchanged both ways, an upstream that is gone or frozen (accepting, answering nothing)
 * passed over, a client that half-closes after its request still answered, a client refused when no
 * upstream is left, the name does not resolve or the connection bound is reached, and close() ending
 * relayed connections.
 */
import net from 'node:net';
import { freePort } from '../src/process/net';
import { startGateway, type Gateway, type GatewayOptions } from '../src/gateway/tcp-gateway';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * An upstream that answers `GET /health` as HTTP (200), each other line with `<name>:<line>`, and a
 * client's end with `<name>:bye` before ending its own side.
 */
function upstream(name: string, host: string, port: number): Promise<net.Server> {
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => s.destroy());
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      if (d.startsWith('GET /health')) s.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
      else s.write(`${name}:${d}`);
    });
    s.on('end', () => s.end(`${name}:bye\n`));
  });
  return listen(server, host, port);
}

/** An upstream whose process is frozen: its kernel accepts connections; nothing answers. Closing it drops what it holds. */
async function frozen(host: string, port: number): Promise<net.Server> {
  const held: net.Socket[] = [];
  const server = net.createServer((s) => {
    s.on('error', () => undefined);
    held.push(s);
  });
  const close = server.close.bind(server);
  server.close = (cb) => {
    held.forEach((s) => s.destroy());
    return close(cb);
  };
  return listen(server, host, port);
}

function listen(server: net.Server, host: string, port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** Sends `line` through the gateway (then half-closes when `end`); everything answered until the gateway closes, or `closed` when nothing was. */
function ask(port: number, line: string, end = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let got = '';
    const timer = setTimeout(() => reject(new Error(`no answer to ${line}`)), 5000);
    s.setEncoding('utf8');
    s.on('connect', () => (end ? s.end(line) : s.write(line)));
    s.on('data', (d: string) => {
      got += d;
      if (!end && got.endsWith('\n')) s.destroy();
    });
    s.on('end', () => s.end()); // the other side is done: so is this one
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
  const gateway = async (o: Partial<GatewayOptions> & Pick<GatewayOptions, 'upstreamPort'>): Promise<Gateway> => {
    const g = await startGateway({
      host: '127.0.0.1',
      port: 0,
      upstreamHost: 'api',
      connectTimeoutMs: 1000,
      maxConnections: 100,
      healthPath: '/health',
      refreshMs: 100,
      ...o,
    });
    closers.push(() => g.close());
    return g;
  };

  it('relays each connection to the healthy upstreams in turn, bytes unchanged, and passes over one that is gone', async () => {
    const port = await freePort();
    const a = await upstream('a', '127.0.0.1', port);
    const b = await upstream('b', '127.0.0.2', port);
    closers.push(
      () => close(a),
      () => close(b),
    );
    const refused: string[] = [];
    const g = await gateway({
      upstreamPort: port,
      resolve: async () => ['127.0.0.2', '127.0.0.1'],
      onRefused: (r) => refused.push(r),
      refreshMs: 60_000,
    });
    expect(g.upstreams()).toEqual({
      addresses: ['127.0.0.1', '127.0.0.2'],
      healthy: expect.arrayContaining(['127.0.0.1', '127.0.0.2']),
    });

    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await ask(g.port, `hello ${i} \u00e9\n`));
    expect(answers).toEqual(['a:hello 0 \u00e9\n', 'b:hello 1 \u00e9\n', 'a:hello 2 \u00e9\n', 'b:hello 3 \u00e9\n']);
    expect(g.relayed()).toEqual(
      new Map([
        ['127.0.0.1', 2],
        ['127.0.0.2', 2],
      ]),
    );

    // One upstream gone (before a probe says so): its connection is refused, the next address takes it.
    await close(a);
    for (let i = 0; i < 3; i++) expect(await ask(g.port, `again ${i}\n`)).toBe(`b:again ${i}\n`);
    // None left: the client's connection is closed, and the gateway says why.
    await close(b);
    expect(await ask(g.port, 'nobody\n')).toBe('closed');
    expect(refused).toEqual([`no address of api:${port} took the connection (127.0.0.1, 127.0.0.2)`]);
  });

  it('passes over a frozen upstream (it accepts, its probe gets no answer), and takes it back once it answers', async () => {
    const port = await freePort();
    let stuck = await frozen('127.0.0.3', port);
    const b = await upstream('b', '127.0.0.4', port);
    closers.push(() => close(b));
    const g = await gateway({
      upstreamPort: port,
      resolve: async () => ['127.0.0.3', '127.0.0.4'],
      probeTimeoutMs: 200,
    });
    expect(g.upstreams()).toEqual({ addresses: ['127.0.0.3', '127.0.0.4'], healthy: ['127.0.0.4'] });
    for (let i = 0; i < 4; i++) expect(await ask(g.port, `q${i}\n`)).toBe(`b:q${i}\n`);
    expect(g.relayed()).toEqual(new Map([['127.0.0.4', 4]]));

    // Thawed: the next probes find it, and it takes its turn again.
    await close(stuck);
    stuck = await upstream('a', '127.0.0.3', port);
    closers.push(() => close(stuck));
    const until = Date.now() + 5000;
    while (g.upstreams().healthy.length < 2 && Date.now() < until) await sleep(50);
    expect(g.upstreams().healthy.sort()).toEqual(['127.0.0.3', '127.0.0.4']);
    const answers = [await ask(g.port, 'x\n'), await ask(g.port, 'y\n')];
    expect(answers.map((x) => x[0]).sort()).toEqual(['a', 'b']);
  });

  it('passes a half-close on: a client that ends after its request still reads the whole answer', async () => {
    const port = await freePort();
    const a = await upstream('a', '127.0.0.1', port);
    closers.push(() => close(a));
    const g = await gateway({ upstreamPort: port, resolve: async () => ['127.0.0.1'] });
    expect(await ask(g.port, 'last words\n', true)).toBe('a:last words\na:bye\n');
  });

  it('refuses a connection past its bound, and one whose upstream name does not resolve; close() ends what it relays', async () => {
    const port = await freePort();
    const a = await upstream('a', '127.0.0.1', port);
    closers.push(() => close(a));
    const unresolved = await gateway({
      upstreamPort: port,
      resolve: async () => Promise.reject(new Error('ENOTFOUND')),
    });
    expect(await ask(unresolved.port, 'x\n')).toBe('closed');

    const refused: string[] = [];
    const g = await startGateway({
      host: '127.0.0.1',
      port: 0,
      upstreamHost: 'api',
      upstreamPort: port,
      connectTimeoutMs: 1000,
      maxConnections: 1,
      resolve: async () => ['127.0.0.1'],
      onRefused: (r) => refused.push(r),
    });
    let gClosed = false;
    closers.push(() => (gClosed ? Promise.resolve() : g.close()));
    const held = net.connect(g.port, '127.0.0.1');
    held.on('error', () => undefined);
    const heldClosed = new Promise<boolean>((r) => held.on('close', () => r(true)));
    await new Promise((r) => held.on('connect', r));
    held.write('open\n');
    await new Promise((r) => held.once('data', r));
    // One connection held, the bound is one: the next is dropped, and said so.
    expect(await ask(g.port, 'one too many\n')).toBe('closed');
    expect(refused).toEqual(['a connection was dropped: 1 held already (GATEWAY_MAX_CONNECTIONS)']);
    // Closing the gateway ends the connection it relays (the client sees it closed, not left open).
    const racer = new Promise<boolean>((r) => setTimeout(() => r(false), 3000));
    await g.close();
    gClosed = true;
    expect(await Promise.race([heldClosed, racer])).toBe(true);
  });
});
