/**
 * The front door of a scaled api service: a TCP balancer. Each connection it accepts goes to one of the
 * addresses the upstream's name resolves to now (docker-compose's DNS answers every replica of a
 * service), taken in turn; an address that refuses, or does not connect within the bound, is passed
 * over for the next. Bytes are relayed as they are, so HTTP, keep-alive and websockets pass unchanged,
 * and nothing of a request is read here (the api authenticates it). Either side closing or failing
 * ends both.
 */
import { lookup } from 'node:dns/promises';
import net from 'node:net';

export interface GatewayOptions {
  host: string;
  port: number;
  /** The upstream's name and port (`api:8000`): every address of the name is a candidate. */
  upstreamHost: string;
  upstreamPort: number;
  /** How long one connection to one upstream address may take (ms). */
  connectTimeoutMs: number;
  /** Connections held at once; one more is refused at once. */
  maxConnections: number;
  /** Said once per failure that leaves a client without an upstream. */
  onRefused?: (reason: string) => void;
  /** The upstream's addresses now (default: every address DNS gives for it). */
  resolve?: (host: string) => Promise<string[]>;
}

const resolveAll = async (host: string) => (await lookup(host, { all: true })).map((a) => a.address);

export interface Gateway {
  port: number;
  /** Connections relayed so far, per upstream address. */
  relayed(): Map<string, number>;
  close(): Promise<void>;
}

/** A connection to `address:port`, or null when it is refused or takes longer than `timeoutMs`. */
function connect(address: string, port: number, timeoutMs: number): Promise<net.Socket | null> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: address, port });
    const fail = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(null);
    };
    const timer = setTimeout(fail, timeoutMs);
    socket.once('error', fail);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      resolve(socket);
    });
  });
}

/** Relays both ways until either side ends, closes or fails; then both go. */
function splice(client: net.Socket, upstream: net.Socket): void {
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const s of [client, upstream]) {
    s.setKeepAlive(true, 30_000);
    s.on('error', end);
    s.on('close', end);
  }
  client.pipe(upstream);
  upstream.pipe(client);
  client.resume();
}

export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  let turn = 0;
  const counts = new Map<string, number>();
  /** Every socket held, so that close() ends them rather than waiting on a websocket that stays open. */
  const open = new Set<net.Socket>();
  const hold = (s: net.Socket) => {
    open.add(s);
    s.once('close', () => open.delete(s));
  };
  const refuse = (client: net.Socket, reason: string) => {
    o.onRefused?.(reason);
    client.destroy();
  };
  const pass = async (client: net.Socket) => {
    hold(client);
    client.on('error', () => client.destroy());
    let addresses: string[];
    try {
      addresses = [...new Set(await (o.resolve ?? resolveAll)(o.upstreamHost))].sort();
    } catch (e) {
      refuse(client, `${o.upstreamHost} does not resolve: ${(e as Error).message}`);
      return;
    }
    const first = turn++;
    for (let i = 0; i < addresses.length && !client.destroyed; i++) {
      const address = addresses[(first + i) % addresses.length]!;
      const upstream = await connect(address, o.upstreamPort, o.connectTimeoutMs);
      if (!upstream) continue;
      if (client.destroyed) {
        upstream.destroy();
        return;
      }
      hold(upstream);
      counts.set(address, (counts.get(address) ?? 0) + 1);
      splice(client, upstream);
      return;
    }
    refuse(client, `no address of ${o.upstreamHost}:${o.upstreamPort} took the connection (${addresses.join(', ') || 'none'})`);
  };
  // Paused until it is relayed: nothing the client sends is read here, or lost before the upstream is there.
  const server = net.createServer({ pauseOnConnect: true }, (client) => void pass(client));
  server.maxConnections = o.maxConnections;
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    relayed: () => new Map(counts),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of open) s.destroy();
      }),
  };
}
