/**
 * Sandboxes as containers, through the Docker Engine API (dockerode). The container is named after the
 * sandbox, so a retried start finds the one it made; the runtime's port is published on a free host
 * port of `publishHost` (or, with `network`, reached by the container's name on that network), and the
 * workspace is a named volume that outlives the container and is removed with the sandbox. The runtime
 * runs under the engine's init (node as PID 1 would ignore SIGTERM), with the spec's resource limits.
 *
 * What a sandbox reaches: a bridge network of its own (named and labelled like the container), so it
 * shares no network with another sandbox (the engine does not forward between bridges); the host only
 * through its gateway address, where loopback-bound services (published ports included) are out of
 * reach. With a shared `network` (compose), either every sandbox joins it, or, with `peers`, the peers
 * (the api, the worker) join each sandbox's own network instead. No capability, no privilege gain
 * (no-new-privileges), no host path: the volume is its only mount. With SANDBOX_DISKS and an engine on
 * this host, the volume is a file system of its own of the sandbox's `disk_mb` (process-disks.ts), bound
 * by the engine's `local` driver: a filler fills its workspace, not the host. The container's writable
 * layer is not bounded so (the engine's overlay2 sizes it only on xfs with project quotas).
 */
import Docker from 'dockerode';
import { isIP } from 'node:net';
import { AGENT_SERVER, type ExposedUrl } from '../../src/schemas/sandboxes';
import type { DockerRuntimeHandle as DockerHandle, RuntimeHandle } from '../../src/store/runtime-handle';
import { containerEnv, containerLimits } from './docker-container-env';
import { notFound, statusOf } from './docker-engine-errors';
import { ensureImage } from './docker-images';
import { SandboxNetworks } from './docker-networks';
import { SANDBOX_LABEL as LABEL, sandboxNames } from './docker-sandbox-names';
import { WorkspaceVolumes } from './docker-volumes';
import {
  limitsOf,
  ProviderConfigError,
  wrongHandle,
  type SandboxLimits,
  type RuntimeState,
  type SandboxProvider,
  type RuntimeStartRequest,
  type StartedRuntime,
} from './provider';
import type { SandboxDisks } from './process-disks';

/** The label on every object of a sandbox (defined with its names; tests and helpers import it from here). */
export { SANDBOX_LABEL } from './docker-sandbox-names';

export interface DockerProviderOptions {
  docker: Docker;
  /** Host name in exposed URLs: where published ports are reached from the service. */
  publishHost: string;
  /** Port the runtime listens on inside the container. */
  runtimePort?: number;
  /**
   * A network the containers join (unpublished; their AGENT_SERVER is `http://<container name>:<port>` on
   * it), shared by every sandbox. Unset: each sandbox gets a bridge network of its own.
   */
  network?: string;
  /**
   * With `network`: the containers that join each sandbox's own network instead (the sandbox joins no
   * other), under these names: the running containers of a compose service of that name in the project
   * that made `network` (e.g. `api`, `worker`), or else the container of that name. The sandbox reaches
   * them, and they reach it by its container name; nothing else on `network` is in its reach.
   */
  peers?: string[];
  /** The limits a spec leaves null (SANDBOX_DEFAULT_*). */
  defaultLimits?: SandboxLimits;
  /**
   * A file system of its own of the sandbox's `disk_mb` for each workspace volume (SANDBOX_DISKS), in the
   * tree's `docker-workspaces` on this host. Used only when the engine runs on this host (its name and data directory are
   * this host's): a volume of a remote engine, or of one that sees another file system (this worker in a
   * container), cannot bind a directory of this worker's.
   */
  disks?: SandboxDisks;
}

const DEFAULT_WORKDIR = '/workspace';

/**
 * The host address published ports bind to: the publish host itself when it is an IP address (a loopback
 * one keeps the runtime off the network), 127.0.0.1 for `localhost`, every interface for other names.
 */
export function publishBinding(publishHost: string): string {
  if (publishHost === 'localhost') return '127.0.0.1';
  const bare = publishHost.replace(/^\[(.*)\]$/, '$1');
  return isIP(bare) ? bare : '';
}

const asDocker = (h: RuntimeHandle): DockerHandle => (h.provider === 'docker' ? h : wrongHandle('docker', h));

/** Parses DOCKER_HOST (unix:///var/run/docker.sock, tcp://host:2375, http(s)://host:port) into dockerode options. */
export function dockerFromHost(dockerHost: string): Docker {
  if (dockerHost.startsWith('unix://')) return new Docker({ socketPath: dockerHost.slice('unix://'.length) });
  const url = new URL(dockerHost.replace(/^tcp:/, 'http:'));
  return new Docker({
    protocol: url.protocol === 'https:' ? 'https' : 'http',
    host: url.hostname,
    port: Number(url.port || 2375),
  });
}

export class DockerProvider implements SandboxProvider {
  readonly name = 'docker' as const;
  private readonly runtimePort: number;

  /** Whether each sandbox has a network of its own: always, but with a shared `network` and no peers. */
  private readonly ownNetworks: boolean;
  private readonly networks: SandboxNetworks;
  private readonly volumes: WorkspaceVolumes;

  constructor(private readonly opts: DockerProviderOptions) {
    this.runtimePort = opts.runtimePort ?? 8000;
    this.ownNetworks = !opts.network || (opts.peers ?? []).length > 0;
    this.networks = new SandboxNetworks(opts.docker, { network: opts.network, peers: opts.peers });
    this.volumes = new WorkspaceVolumes(opts.docker, opts.disks);
  }

  async start(req: RuntimeStartRequest): Promise<StartedRuntime> {
    const { container: name } = sandboxNames(req.sandboxId);
    const docker = this.opts.docker;
    let container = docker.getContainer(name);
    let info: Docker.ContainerInspectInfo | null = await container
      .inspect()
      .catch((e: unknown) => notFound<Docker.ContainerInspectInfo>(e));
    // One that exited (killed from outside, or crashed) is replaced: a sandbox's state is its volume.
    if (info && !info.State.Running && !info.State.Paused && info.State.Status !== 'created') {
      await container.remove({ force: true }).catch(notFound);
      info = null;
    }
    if (!info) {
      container = await this.create(req);
      info = await container.inspect();
    }
    if (this.opts.network && this.ownNetworks) await this.networks.connectPeers(req.sandboxId);
    if (info.State.Paused) await container.unpause();
    else if (!info.State.Running) await container.start();
    info = await container.inspect();
    const handle: DockerHandle = {
      provider: 'docker',
      containerId: info.Id,
      container: name,
      volume: sandboxNames(req.sandboxId).volume,
      workspace: this.workdir(req.spec),
    };
    return { handle, exposedUrls: [this.agentServer(name, info)] };
  }

  /** The runtime's working directory in the container (the volume's mount). */
  private workdir(spec: RuntimeStartRequest['spec']): string {
    return spec.working_dir ?? DEFAULT_WORKDIR;
  }

  private agentServer(name: string, info: Docker.ContainerInspectInfo): ExposedUrl {
    if (this.opts.network)
      return { name: AGENT_SERVER, url: `http://${name}:${this.runtimePort}`, port: this.runtimePort };
    const binding = info.NetworkSettings.Ports?.[`${this.runtimePort}/tcp`]?.[0];
    if (!binding?.HostPort) throw new Error(`container ${name} publishes no host port for ${this.runtimePort}/tcp`);
    const hostPort = Number(binding.HostPort);
    return { name: AGENT_SERVER, url: `http://${this.opts.publishHost}:${hostPort}`, port: hostPort };
  }

  /** Creates the container (and its volume, which may outlive an earlier container); a concurrent creation wins. */
  private async create(req: RuntimeStartRequest): Promise<Docker.Container> {
    const { spec } = req;
    const image = spec.image;
    if (!image) throw new ProviderConfigError(`spec ${spec.id} has no image; a docker spec needs one`);
    const { container: name, volume } = sandboxNames(req.sandboxId);
    const docker = this.opts.docker;
    await ensureImage(docker, image, req.progress);
    const ownNetwork = this.ownNetworks ? await this.networks.ensureNetwork(req.sandboxId) : null;
    await this.volumes.ensureVolume(req.sandboxId, limitsOf(spec, this.opts.defaultLimits).diskMb);
    const port = `${this.runtimePort}/tcp`;
    const workdir = this.workdir(spec);
    const env = containerEnv(req, workdir, this.runtimePort);
    const limits = containerLimits(spec, this.opts.defaultLimits);
    try {
      return await docker.createContainer({
        name,
        Image: image,
        ...(spec.command ? { Cmd: spec.command } : {}),
        WorkingDir: workdir,
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        Labels: { [LABEL]: req.sandboxId },
        ExposedPorts: { [port]: {} },
        HostConfig: {
          Init: true,
          // Whatever the spec: no capability (the runtime, an ordinary user, needs none), no privilege gained
          // through a setuid file, no device.
          Privileged: false,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          ...limits,
          Binds: [`${volume}:${workdir}`],
          NetworkMode: ownNetwork ?? this.opts.network,
          ...(this.opts.network
            ? {}
            : { PortBindings: { [port]: [{ HostIp: publishBinding(this.opts.publishHost), HostPort: '' }] } }),
        },
      });
    } catch (e) {
      if (statusOf(e) === 409) return docker.getContainer(name); // another attempt created it meanwhile
      throw e;
    }
  }

  async pause(handle: RuntimeHandle): Promise<void> {
    await this.opts.docker.getContainer(asDocker(handle).containerId).pause();
  }

  async resume(handle: RuntimeHandle): Promise<void> {
    await this.opts.docker.getContainer(asDocker(handle).containerId).unpause();
  }

  async delete(sandboxId: string, handle: RuntimeHandle | null): Promise<void> {
    const names = sandboxNames(sandboxId);
    const ignoreMissing = (e: unknown) => {
      if (statusOf(e) !== 404) throw e;
    };
    await this.opts.docker
      .getContainer(handle ? asDocker(handle).containerId : names.container)
      .remove({ force: true, v: true })
      .catch(ignoreMissing);
    await this.volumes.removeVolume(sandboxId);
    // Also with `network` set: the sandbox may date from a configuration without it.
    for (const n of await this.networks.networksOf(sandboxId)) await this.networks.removeNetwork(n.Id);
  }

  /** Every runtime runs in its image; an engine that is down is a failure of the moment, not of the configuration. */
  unrunnable(): null {
    return null;
  }

  async inspect(handle: RuntimeHandle): Promise<RuntimeState> {
    const h = asDocker(handle);
    try {
      const info = await this.opts.docker.getContainer(h.containerId).inspect();
      if (info.State.Paused) return { state: 'paused' };
      if (info.State.Running) return { state: 'running' };
      return {
        state: 'missing',
        detail: `container ${h.container} is ${info.State.Status} (exit code ${info.State.ExitCode})`,
      };
    } catch (e) {
      if (statusOf(e) === 404) return { state: 'missing', detail: `container ${h.container} no longer exists` };
      throw e;
    }
  }
}
