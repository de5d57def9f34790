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
import fs from 'node:fs';
import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { AGENT_SERVER, type ExposedUrl } from '../../src/schemas/sandboxes';
import type { DockerRuntimeHandle as DockerHandle, RuntimeHandle } from '../../src/store/runtime-handle';
import {
  limitsOf,
  ProviderConfigError,
  wrongHandle,
  type SandboxLimits,
  type RuntimeState,
  type SandboxProvider,
  type StartRequest,
  type StartedRuntime,
} from './provider';
import { openHandsEnv } from './openhands-launch';
import type { SandboxDisks } from './process-disks';

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
   * A file system of its own of the sandbox's `disk_mb` for each workspace volume (SANDBOX_DISKS), under
   * `dir` on this host. Used only when the engine runs on this host (its name and data directory are
   * this host's): a volume of a remote engine, or of one that sees another file system (this worker in a
   * container), cannot bind a directory of this worker's.
   */
  disks?: { disks: SandboxDisks; dir: string };
}

/** Compose's labels of the project (on its networks and containers) and of a container's service. */
const COMPOSE_PROJECT = 'com.docker.compose.project';
const COMPOSE_SERVICE = 'com.docker.compose.service';

export const SANDBOX_LABEL = 'agent-control.sandbox-id';
const LABEL = SANDBOX_LABEL;
const DEFAULT_WORKDIR = '/workspace';
/** The runtime's conversations, under the workspace (the volume). */
const STATE_DIR = '.agent-runtime';
const MIB = 1024 * 1024;

const statusOf = (e: unknown) => (e as { statusCode?: number }).statusCode;
/** What the engine said (dockerode's message wraps it). */
const engineMessage = (e: unknown): string => {
  const said = (e as { json?: { message?: unknown } }).json?.message;
  return typeof said === 'string' ? said : (e as Error).message;
};
const notFound = <T>(e: unknown): T | null => {
  if (statusOf(e) === 404) return null;
  throw e;
};

/**
 * The host address published ports bind to: the publish host itself when it is an IP address (a loopback
 * one keeps the runtime off the network), 127.0.0.1 for `localhost`, every interface for other names.
 */
export function publishBinding(publishHost: string): string {
  if (publishHost === 'localhost') return '127.0.0.1';
  const bare = publishHost.replace(/^\[(.*)\]$/, '$1');
  return isIP(bare) ? bare : '';
}

/** A failed network creation; the engine's address pools running out is the operator's to fix. */
function networkError(name: string, e: unknown): Error {
  const message = engineMessage(e);
  if (/address pool|non-overlapping/i.test(message)) {
    return new ProviderConfigError(
      `cannot create the sandbox network ${name}: the Docker engine has no address range left (${message}); give dockerd larger default-address-pools, or delete sandboxes`,
    );
  }
  return e as Error;
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

  constructor(private readonly opts: DockerProviderOptions) {
    this.runtimePort = opts.runtimePort ?? 8000;
    this.ownNetworks = !opts.network || (opts.peers ?? []).length > 0;
  }

  private names(sandboxId: string) {
    const name = `agent-control-sandbox-${sandboxId}`;
    return { container: name, volume: name, network: name };
  }

  /**
   * The sandbox's own bridge network, made when missing. A name is no key for the engine (two concurrent
   * creations can both succeed), so every attempt settles on the oldest network of that name and label
   * and removes the others.
   */
  private async ensureNetwork(sandboxId: string): Promise<string> {
    const { network: name } = this.names(sandboxId);
    const docker = this.opts.docker;
    try {
      await docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        CheckDuplicate: true,
        Labels: { [LABEL]: sandboxId },
      });
    } catch (e) {
      if (statusOf(e) !== 409) throw networkError(name, e); // 409: an earlier attempt made it
    }
    const [kept, ...duplicates] = await this.networksOf(sandboxId);
    if (!kept) throw new Error(`the network ${name} is gone right after its creation`);
    for (const d of duplicates) await this.removeNetwork(d.Id).catch(() => undefined); // the other attempt settles on the same one
    return kept.Id;
  }

  /** Removes a network, after taking off what is still attached to it (peers). A missing one is not an error. */
  private async removeNetwork(id: string): Promise<void> {
    const network = this.opts.docker.getNetwork(id);
    const info = await network.inspect().catch((e: unknown) => notFound<Docker.NetworkInspectInfo>(e));
    if (!info) return;
    for (const container of Object.keys(info.Containers ?? {}))
      await network.disconnect({ Container: container, Force: true }).catch(() => undefined);
    await network.remove().catch((e: unknown) => notFound(e));
  }

  /** The containers `peers` names, each with the name the sandbox reaches it by. */
  private async peerContainers(): Promise<{ id: string; alias: string }[]> {
    const docker = this.opts.docker;
    const shared = await docker
      .getNetwork(this.opts.network!)
      .inspect()
      .catch((e: unknown) => notFound<Docker.NetworkInspectInfo>(e));
    if (!shared)
      throw new ProviderConfigError(`the Docker network ${this.opts.network} (DOCKER_NETWORK) does not exist`);
    const project = shared.Labels?.[COMPOSE_PROJECT];
    const found: { id: string; alias: string }[] = [];
    for (const alias of this.opts.peers ?? []) {
      const services = project
        ? await docker.listContainers({
            filters: { label: [`${COMPOSE_PROJECT}=${project}`, `${COMPOSE_SERVICE}=${alias}`] },
          })
        : [];
      if (services.length > 0) {
        found.push(...services.map((c) => ({ id: c.Id, alias })));
        continue;
      }
      const container = await docker
        .getContainer(alias)
        .inspect()
        .catch((e: unknown) => notFound<Docker.ContainerInspectInfo>(e));
      if (!container)
        throw new ProviderConfigError(
          `the sandbox peer ${alias} is neither a running service of the compose project ${project ?? '(none)'} nor a container`,
        );
      found.push({ id: container.Id, alias });
    }
    return found;
  }

  /** Attaches the peers to the sandbox's network, those not on it yet (a peer recreated since, say). */
  private async connectPeers(sandboxId: string): Promise<void> {
    const [own] = await this.networksOf(sandboxId);
    if (!own) return; // a container made before peers were configured: it is on the shared network
    const network = this.opts.docker.getNetwork(own.Id);
    const attached = new Set(Object.keys((await network.inspect()).Containers ?? {}));
    for (const peer of await this.peerContainers()) {
      if (attached.has(peer.id)) continue;
      await network.connect({ Container: peer.id, EndpointConfig: { Aliases: [peer.alias] } }).catch((e: unknown) => {
        if (!/already exists/i.test(engineMessage(e))) throw e; // a concurrent attempt attached it
      });
    }
  }

  /** The sandbox's networks (one, but for concurrent creations), oldest first. */
  private async networksOf(sandboxId: string): Promise<Docker.NetworkInspectInfo[]> {
    const { network: name } = this.names(sandboxId);
    const found = await this.opts.docker.listNetworks({ filters: { label: [`${LABEL}=${sandboxId}`], name: [name] } });
    return found
      .filter((n) => n.Name === name)
      .sort((a, b) => a.Created.localeCompare(b.Created) || a.Id.localeCompare(b.Id));
  }

  private async ensureImage(image: string, progress?: () => void): Promise<void> {
    try {
      await this.opts.docker.getImage(image).inspect();
      return;
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
    try {
      const stream = await this.opts.docker.pull(image);
      await new Promise<void>((resolve, reject) =>
        this.opts.docker.modem.followProgress(
          stream,
          (err: Error | null) => (err ? reject(err) : resolve()),
          () => progress?.(),
        ),
      );
    } catch (e) {
      // No registry answers, or it does not have the image: a retry would fail the same way.
      throw new ProviderConfigError(
        `the image ${image} is not on the Docker engine and pulling it failed: ${(e as Error).message}`,
      );
    }
  }

  async start(req: StartRequest): Promise<StartedRuntime> {
    const { container: name } = this.names(req.sandboxId);
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
    if (this.opts.network && this.ownNetworks) await this.connectPeers(req.sandboxId);
    if (info.State.Paused) await container.unpause();
    else if (!info.State.Running) await container.start();
    info = await container.inspect();
    const handle: DockerHandle = {
      provider: 'docker',
      containerId: info.Id,
      container: name,
      volume: this.names(req.sandboxId).volume,
      workspace: this.workdir(req.spec),
    };
    return { handle, exposedUrls: [this.agentServer(name, info)] };
  }

  /** The runtime's working directory in the container (the volume's mount). */
  private workdir(spec: StartRequest['spec']): string {
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
  private async create(req: StartRequest): Promise<Docker.Container> {
    const { spec } = req;
    const image = spec.image;
    if (!image) throw new ProviderConfigError(`spec ${spec.id} has no image; a docker spec needs one`);
    const { container: name, volume } = this.names(req.sandboxId);
    const docker = this.opts.docker;
    await this.ensureImage(image, req.progress);
    const ownNetwork = this.ownNetworks ? await this.ensureNetwork(req.sandboxId) : null;
    await this.ensureVolume(req.sandboxId, limitsOf(spec, this.opts.defaultLimits).diskMb);
    const port = `${this.runtimePort}/tcp`;
    const workdir = this.workdir(spec);
    // On the volume, so a replaced container finds its conversations.
    const stateDir = `${workdir.replace(/\/+$/, '')}/${STATE_DIR}`;
    const env = {
      ...spec.initial_env,
      SESSION_API_KEY: req.sessionApiKey,
      RUNTIME_HOST: '0.0.0.0',
      RUNTIME_PORT: String(this.runtimePort),
      RUNTIME_WORKING_DIR: workdir,
      RUNTIME_STATE_DIR: stateDir,
      CONTROL_PLANE_URL: req.controlPlaneUrl,
      // The real agent server (an image of buildOpenHandsImage's): its key, webhook and state paths.
      ...(spec.runtime === 'openhands'
        ? openHandsEnv({
            env: null,
            stateDir,
            workspace: workdir,
            host: '0.0.0.0',
            port: this.runtimePort,
            sessionApiKey: req.sessionApiKey,
            controlPlaneUrl: req.controlPlaneUrl,
          })
        : {}),
    };
    const { memoryMb, cpus, pidsLimit } = limitsOf(spec, this.opts.defaultLimits);
    const limits = {
      ...(memoryMb ? { Memory: memoryMb * MIB, MemorySwap: memoryMb * MIB } : {}),
      ...(cpus ? { NanoCpus: Math.round(cpus * 1e9) } : {}),
      ...(pidsLimit ? { PidsLimit: pidsLimit } : {}),
    };
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

  /** Whether the engine runs on this host and sees its file system (its first answer is kept; a failed ask is asked again). */
  private engineHere?: Promise<boolean>;
  private engineOnThisHost(): Promise<boolean> {
    this.engineHere ??= this.opts.docker.info().then(
      (info: { Name?: string; DockerRootDir?: string }) =>
        info.Name === os.hostname() && !!info.DockerRootDir && fs.existsSync(info.DockerRootDir),
      (e: unknown) => {
        this.engineHere = undefined;
        throw e;
      },
    );
    return this.engineHere;
  }

  /**
   * The sandbox's workspace volume: on a file system of its own of `diskMb` when disks are given and the
   * engine is here (mounted again after a reboot), else a plain volume. A volume made before (a replaced
   * container) is kept as it was made.
   */
  private async ensureVolume(sandboxId: string, diskMb: number | null): Promise<void> {
    const { volume } = this.names(sandboxId);
    const docker = this.opts.docker;
    const disks = this.opts.disks;
    if (!disks) {
      await docker.createVolume({ Name: volume, Labels: { [LABEL]: sandboxId } }); // one that exists is answered as it is
      return;
    }
    const existing = await docker
      .getVolume(volume)
      .inspect()
      .catch((e: unknown) => notFound<{ Options?: Record<string, string> | null }>(e));
    const dir = path.join(disks.dir, sandboxId);
    if (existing) {
      if (existing.Options?.device === dir && diskMb) await disks.disks.attach(sandboxId, dir, diskMb); // mounted again after a reboot
      return;
    }
    if (!diskMb || !(await this.engineOnThisHost())) {
      await docker.createVolume({ Name: volume, Labels: { [LABEL]: sandboxId } });
      return;
    }
    fs.mkdirSync(disks.dir, { recursive: true, mode: 0o711 });
    await disks.disks.attach(sandboxId, dir, diskMb);
    // Empty, so the engine fills it from the image's directory, owner included, as it does a new volume.
    fs.rmSync(path.join(dir, 'lost+found'), { recursive: true, force: true });
    await docker.createVolume({
      Name: volume,
      Labels: { [LABEL]: sandboxId },
      Driver: 'local',
      DriverOpts: { type: 'none', o: 'bind', device: dir },
    });
  }

  async pause(handle: RuntimeHandle): Promise<void> {
    await this.opts.docker.getContainer(asDocker(handle).containerId).pause();
  }

  async resume(handle: RuntimeHandle): Promise<void> {
    await this.opts.docker.getContainer(asDocker(handle).containerId).unpause();
  }

  async delete(sandboxId: string, handle: RuntimeHandle | null): Promise<void> {
    const names = this.names(sandboxId);
    const ignoreMissing = (e: unknown) => {
      if (statusOf(e) !== 404) throw e;
    };
    await this.opts.docker
      .getContainer(handle ? asDocker(handle).containerId : names.container)
      .remove({ force: true, v: true })
      .catch(ignoreMissing);
    await this.opts.docker.getVolume(names.volume).remove().catch(ignoreMissing);
    const disks = this.opts.disks;
    if (disks) {
      const dir = path.join(disks.dir, sandboxId);
      await disks.disks.detach(sandboxId, dir);
      fs.rmdir(dir, () => undefined); // the empty mount point; one not empty stays for a look
    }
    // Also with `network` set: the sandbox may date from a configuration without it.
    for (const n of await this.networksOf(sandboxId)) await this.removeNetwork(n.Id);
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
