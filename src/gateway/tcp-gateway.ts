/**
 * The front door of a scaled api service: a TCP balancer. It keeps the addresses the upstream's name
 * resolves to (docker-compose's DNS answers every replica of a service), looked up again every
 * `refreshMs`, and, with `healthPath`, which of them answer it (an HTTP GET within `probeTimeoutMs`): a
 * frozen api, whose kernel still accepts connections, stops answering its probe and is passed over.
 * Each connection goes to the next healthy address in turn (all of them when none is healthy: the probe
 * may be what fails); one that refuses, or does not connect within the bound, is passed over for the
 * next. Bytes are relayed as they are, so HTTP, keep-alive and websockets pass unchanged, and nothing of
 * a request is read here (the api authenticates it). A side that ends has its end passed on (a client
 * may half-close after its request and still read the answer); a side that fails ends both; a side that
 * closes leaves the other `lingerMs` to finish, then ends it.
 */
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { listenOn } from '../process/net';

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
  /** The path each address is asked every `refreshMs` (`/health`); unset: every address is taken as healthy. */
  healthPath?: string;
  /** How often the addresses are looked up and probed (ms). */
  refreshMs?: number;
  /** How long a probe may take (ms). */
  probeTimeoutMs?: number;
  /** How long one side may stay open once the other closed (ms). */
  lingerMs?: number;
  /** Said once per failure that leaves a client without an upstream, or a connection dropped past the bound. */
  onRefused?: (reason: string) => void;
  /** A failure of the listening socket after the start (out of file handles on accept); it goes on listening. */
  onListenerError?: (e: Error) => void;
  /** The upstream's addresses now (default: every address DNS gives for it). */
  resolve?: (host: string) => Promise<string[]>;
}

export interface Gateway {
  port: number;
  /** Connections relayed so far, per upstream address. */
  relayed(): Map<string, number>;
  /** The addresses known now, and which of them answered their last probe. */
  upstreams(): { addresses: string[]; healthy: string[] };
  close(): Promise<void>;
}

const resolveAll = async (host: string) => (await lookup(host, { all: true })).map((a) => a.address);

/** A connection to `address:port`, or null when it is refused or takes longer than `timeoutMs`. */
function connect(address: string, port: number, timeoutMs: number): Promise<net.Socket | null> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: address, port, allowHalfOpen: true });
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

/** Whether `address:port` answers GET `path` with a 2xx within `timeoutMs`. */
async function answers(address: string, port: number, path: string, timeoutMs: number): Promise<boolean> {
  const host = address.includes(':') ? `[${address}]` : address;
  try {
    const res = await fetch(`http://${host}:${port}${path}`, {
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'manual',
    });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** Relays both ways: ends are passed on, a failure ends both, a close leaves the other `lingerMs`. */
function splice(client: net.Socket, upstream: net.Socket, lingerMs: number): void {
  const both = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const [self, other] of [
    [client, upstream],
    [upstream, client],
  ] as const) {
    self.setKeepAlive(true, 30_000);
    self.on('error', both);
    self.once('close', () => setTimeout(() => other.destroy(), lingerMs).unref());
  }
  client.pipe(upstream);
  upstream.pipe(client);
  client.resume();
}

export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const refreshMs = o.refreshMs ?? 2000;
  const probeTimeoutMs = o.probeTimeoutMs ?? 1000;
  const lingerMs = o.lingerMs ?? 10_000;
  const sockets = holdSockets();
  const upstream = watchUpstream(o, refreshMs, probeTimeoutMs);
  const relay = relayer(o, upstream, sockets.hold, lingerMs);
  const server = await listen(o, relay.pass).catch((e: unknown) => {
    upstream.stop(); // no refreshes for a gateway that never started
    throw e;
  });
  await upstream.refreshed();
  return {
    port: (server.address() as net.AddressInfo).port,
    relayed: () => new Map(relay.counts),
    upstreams: upstream.snapshot,
    close: () =>
      new Promise<void>((resolve) => {
        upstream.stop();
        server.close(() => resolve());
        sockets.destroyAll();
      }),
  };
}

/** Every socket held, so that close() ends them rather than waiting on a websocket that stays open. */
function holdSockets() {
  const open = new Set<net.Socket>();
  return {
    hold: (s: net.Socket) => {
      open.add(s);
      s.once('close', () => open.delete(s));
    },
    destroyAll: () => {
      for (const s of open) s.destroy();
    },
  };
}

interface Known {
  addresses: string[];
  healthy: Set<string>;
  error: string | null;
}

type UpstreamWatch = ReturnType<typeof watchUpstream>;

/** The upstream's addresses and which of them answer their probe, looked up again every `refreshMs`. */
function watchUpstream(o: GatewayOptions, refreshMs: number, probeTimeoutMs: number) {
  let known: Known | null = null;
  let refreshing: Promise<void> | null = null;
  const refresh = async () => {
    let addresses: string[] = [];
    let error: string | null = null;
    try {
      addresses = [...new Set(await (o.resolve ?? resolveAll)(o.upstreamHost))].sort();
    } catch (e) {
      error = `${o.upstreamHost} does not resolve: ${(e as Error).message}`;
    }
    const healthy = new Set<string>();
    await Promise.all(
      addresses.map(
        async (a) =>
          (!o.healthPath || (await answers(a, o.upstreamPort, o.healthPath, probeTimeoutMs))) && healthy.add(a),
      ),
    );
    known = { addresses, healthy, error };
  };
  /** One refresh at a time; the connections that wait for one share it. */
  const refreshed = () => (refreshing ??= refresh().finally(() => (refreshing = null)));
  const timer = setInterval(() => void refreshed(), refreshMs);
  timer.unref();
  return {
    refreshed,
    /** What the last refresh found (null before the first). */
    known: () => known,
    snapshot: () => ({ addresses: known?.addresses ?? [], healthy: [...(known?.healthy ?? [])] }),
    stop: () => clearInterval(timer),
  };
}

/** Passes each client to the next healthy address in turn, and counts the connections relayed per address. */
function relayer(o: GatewayOptions, upstream: UpstreamWatch, hold: (s: net.Socket) => void, lingerMs: number) {
  let turn = 0;
  const counts = new Map<string, number>();
  const refuse = (client: net.Socket, reason: string) => {
    o.onRefused?.(reason);
    client.destroy();
  };
  const pass = async (client: net.Socket) => {
    hold(client);
    client.on('error', () => client.destroy());
    if (!upstream.known()) await upstream.refreshed();
    const { addresses, healthy, error } = upstream.known()!;
    if (addresses.length === 0) return refuse(client, error ?? `${o.upstreamHost} has no address`);
    const candidates = addresses.some((a) => healthy.has(a)) ? addresses.filter((a) => healthy.has(a)) : addresses;
    const first = turn++;
    for (let i = 0; i < candidates.length && !client.destroyed; i++) {
      const address = candidates[(first + i) % candidates.length]!;
      const socket = await connect(address, o.upstreamPort, o.connectTimeoutMs);
      if (!socket) continue;
      if (client.destroyed) {
        socket.destroy();
        return;
      }
      hold(socket);
      counts.set(address, (counts.get(address) ?? 0) + 1);
      splice(client, socket, lingerMs);
      return;
    }
    if (!client.destroyed)
      refuse(
        client,
        `no address of ${o.upstreamHost}:${o.upstreamPort} took the connection (${candidates.join(', ')})`,
      );
  };
  return { pass, counts };
}

/** The listening server, `maxConnections` at most; its failures after the start are reported, not thrown. */
async function listen(o: GatewayOptions, pass: (client: net.Socket) => Promise<void>): Promise<net.Server> {
  // Paused until it is relayed: nothing the client sends is read here, or lost before the upstream is there.
  const server = net.createServer({ pauseOnConnect: true, allowHalfOpen: true }, (client) => void pass(client));
  server.maxConnections = o.maxConnections;
  server.on('drop', () =>
    o.onRefused?.(`a connection was dropped: ${o.maxConnections} held already (GATEWAY_MAX_CONNECTIONS)`),
  );
  await listenOn(server, o.port, o.host, (e) => o.onListenerError?.(e));
  return server;
}
