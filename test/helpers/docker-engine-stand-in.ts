/**
 * A loopback stand-in for the Docker Engine API: the routes the docker provider uses (images, volumes,
 * containers: create, start, inspect, pause, unpause, remove), with the Engine's JSON shapes and status
 * codes, an optional `/v1.xx` version prefix, and an in-memory set of images, volumes and containers.
 * It records every request so tests can check what the provider asked for. No container runs.
 */
import http from 'node:http';
import { LoopbackServer } from './loopback-server';

export interface RecordedRequest {
  method: string;
  /** The request target as sent, version prefix and query included. */
  url: string;
  /** Without the version prefix, decoded. */
  path: string;
  query: Record<string, string>;
  body: any;
}

interface FakeContainer {
  Id: string;
  Name: string;
  Config: any;
  HostConfig: any;
  State: { Running: boolean; Paused: boolean; Status: string; ExitCode: number };
  hostPorts: Record<string, string>;
}

export class DockerEngineStandIn extends LoopbackServer {
  readonly requests: RecordedRequest[] = [];
  readonly images = new Set<string>();
  readonly volumes = new Set<string>();
  readonly containers = new Map<string, FakeContainer>();
  private nextPort = 41000;
  private nextId = 1;

  /** The container by id or name, as the Engine resolves either. */
  find(idOrName: string): FakeContainer | undefined {
    return this.containers.get(idOrName) ?? [...this.containers.values()].find((c) => c.Name === `/${idOrName}`);
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url!, 'http://x');
    const path = decodeURIComponent(url.pathname.replace(/^\/v\d+\.\d+/, ''));
    const body = await this.readJson(req);
    this.requests.push({ method: req.method!, url: req.url!, path, query: Object.fromEntries(url.searchParams), body });
    const json = (status: number, value?: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(value === undefined ? '' : JSON.stringify(value));
    };
    const missing = (what: string) => json(404, { message: `No such ${what}` });
    let m: RegExpMatchArray | null;

    if (req.method === 'GET' && (m = path.match(/^\/images\/(.+)\/json$/))) {
      return this.images.has(m[1]!) ? json(200, { Id: `sha256:${m[1]}`, RepoTags: [m[1]] }) : missing(`image: ${m[1]}`);
    }
    if (req.method === 'POST' && path === '/images/create') {
      const image = `${url.searchParams.get('fromImage')}:${url.searchParams.get('tag') ?? 'latest'}`;
      this.images.add(image);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(JSON.stringify({ status: `Pulling from ${image}` }) + '\n');
      res.end(JSON.stringify({ status: `Downloaded newer image for ${image}` }) + '\n');
      return;
    }
    if (req.method === 'POST' && path === '/volumes/create') {
      this.volumes.add(body.Name);
      return json(201, { Name: body.Name, Labels: body.Labels });
    }
    if (req.method === 'DELETE' && (m = path.match(/^\/volumes\/(.+)$/))) {
      if (!this.volumes.delete(m[1]!)) return missing(`volume: ${m[1]}`);
      return json(204);
    }
    if (req.method === 'POST' && path === '/containers/create') {
      const name = url.searchParams.get('name')!;
      if (this.find(name)) return json(409, { message: `Conflict. The container name "/${name}" is already in use` });
      if (!this.images.has(body.Image)) return missing(`image: ${body.Image}`);
      const Id = `c${String(this.nextId++).padStart(12, '0')}`;
      this.containers.set(Id, {
        Id,
        Name: `/${name}`,
        Config: body,
        HostConfig: body.HostConfig,
        State: { Running: false, Paused: false, Status: 'created', ExitCode: 0 },
        hostPorts: {},
      });
      return json(201, { Id, Warnings: [] });
    }
    if ((m = path.match(/^\/containers\/([^/]+)(?:\/(json|start|pause|unpause))?$/))) {
      const c = this.find(m[1]!);
      if (!c) return missing(`container: ${m[1]}`);
      const action = m[2];
      if (req.method === 'GET' && action === 'json') {
        const Ports = Object.fromEntries(
          Object.entries(c.hostPorts).map(([p, hostPort]) => [p, [{ HostIp: '0.0.0.0', HostPort: hostPort }]]),
        );
        return json(200, {
          Id: c.Id,
          Name: c.Name,
          State: c.State,
          Config: c.Config,
          HostConfig: c.HostConfig,
          NetworkSettings: { Ports },
        });
      }
      if (req.method === 'POST' && action === 'start') {
        for (const p of Object.keys(c.HostConfig?.PortBindings ?? {})) c.hostPorts[p] ??= String(this.nextPort++);
        c.State = { Running: true, Paused: false, Status: 'running', ExitCode: 0 };
        return json(204);
      }
      if (req.method === 'POST' && action === 'pause') {
        if (!c.State.Running) return json(409, { message: `Container ${c.Id} is not running` });
        c.State = { ...c.State, Paused: true, Status: 'paused' };
        return json(204);
      }
      if (req.method === 'POST' && action === 'unpause') {
        if (!c.State.Paused) return json(409, { message: `Container ${c.Id} is not paused` });
        c.State = { ...c.State, Paused: false, Status: 'running' };
        return json(204);
      }
      if (req.method === 'DELETE' && action === undefined) {
        if (c.State.Running && url.searchParams.get('force') !== 'true')
          return json(409, { message: 'You cannot remove a running container' });
        this.containers.delete(c.Id);
        return json(204);
      }
    }
    json(404, { message: `page not found: ${req.method} ${path}` });
  }
}
