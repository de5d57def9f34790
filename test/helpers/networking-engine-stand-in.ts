/**
 * The Docker Engine stand-in with the Engine's network routes too (create, list, inspect, remove), for
 * the docker provider's tests of its per-sandbox networks (test/sandbox-providers.test.ts): networks by
 * id, names that need not be unique, and an engine whose address pools are used up.
 */
import type http from 'node:http';
import { DockerEngineStandIn } from './docker-engine-stand-in';

export interface FakeNetwork {
  Id: string;
  Name: string;
  Created: string;
  Driver: string;
  Labels: Record<string, string>;
}

/** The Engine's words when its address pools are used up. */
export const NO_ADDRESS_POOL =
  'could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network';

/** The stand-in with the Engine's network routes (create, list, remove), its JSON shapes and status codes. */
export class NetworkingEngineStandIn extends DockerEngineStandIn {
  readonly networks = new Map<string, FakeNetwork>();
  /** When set, network creation fails as on an engine whose address pools are used up. */
  noAddressPool = false;
  private nextNetwork = 1;

  /** The networks by id or name (names need not be unique: the Engine keys networks by id). */
  findNetworks(idOrName: string): FakeNetwork[] {
    const byId = this.networks.get(idOrName);
    return byId ? [byId] : [...this.networks.values()].filter((n) => n.Name === idOrName);
  }

  /** Adds a network as the Engine makes one (a test's stand-in for another attempt's creation). */
  addNetwork(Name: string, Labels: Record<string, string> = {}): FakeNetwork {
    const i = this.nextNetwork++;
    const n = {
      Id: `n${String(i).padStart(12, '0')}`,
      Name,
      Created: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
      Driver: 'bridge',
      Labels,
    };
    this.networks.set(n.Id, n);
    return n;
  }

  protected override async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url!, 'http://x');
    const path = decodeURIComponent(url.pathname.replace(/^\/v\d+\.\d+/, ''));
    if (!path.startsWith('/networks')) return super.handle(req, res);
    const body = await this.readJson(req);
    this.requests.push({ method: req.method!, url: req.url!, path, query: Object.fromEntries(url.searchParams), body });
    const json = (status: number, value?: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(value === undefined ? '' : JSON.stringify(value));
    };
    let m: RegExpMatchArray | null;
    if (req.method === 'POST' && path === '/networks/create') {
      if (this.noAddressPool) return json(500, { message: NO_ADDRESS_POOL });
      if (body.CheckDuplicate && this.findNetworks(body.Name).length > 0)
        return json(409, { message: `network with name ${body.Name} already exists` });
      return json(201, { Id: this.addNetwork(body.Name, body.Labels ?? {}).Id, Warning: '' });
    }
    if (req.method === 'GET' && path === '/networks') {
      const filters = JSON.parse(url.searchParams.get('filters') ?? '{}') as { label?: string[]; name?: string[] };
      const labelled = (n: FakeNetwork, l: string) => {
        const [k, ...v] = l.split('=');
        return k! in n.Labels && (v.length === 0 || n.Labels[k!] === v.join('='));
      };
      // The Engine's name filter matches a part of the name.
      const matches = (n: FakeNetwork) =>
        (filters.label ?? []).every((l) => labelled(n, l)) && (filters.name ?? []).every((x) => n.Name.includes(x));
      return json(200, [...this.networks.values()].filter(matches));
    }
    if (req.method === 'GET' && (m = path.match(/^\/networks\/([^/]+)$/))) {
      const found = this.findNetworks(m[1]!);
      if (found.length !== 1) return json(404, { message: `network ${m[1]} not found` });
      return json(200, { ...found[0], Containers: {} }); // containers join by NetworkMode here: none is attached later
    }
    if (req.method === 'DELETE' && (m = path.match(/^\/networks\/(.+)$/))) {
      const found = this.findNetworks(m[1]!);
      if (found.length !== 1)
        return json(found.length ? 400 : 404, {
          message: found.length ? `network ${m[1]} is ambiguous` : `No such network: ${m[1]}`,
        });
      const n = found[0]!;
      if ([...this.containers.values()].some((c) => [n.Id, n.Name].includes(c.HostConfig?.NetworkMode))) {
        return json(403, {
          message: `error while removing network: network ${n.Name} id ${n.Id} has active endpoints`,
        });
      }
      this.networks.delete(n.Id);
      return json(204);
    }
    json(404, { message: `page not found: ${req.method} ${path}` });
  }
}
