/**
 * Sandboxes as containers, through the Docker Engine API (dockerode). The container is named after the
 * sandbox, so a retried start finds the one it made; the runtime's port is published on a free host
 * port of `publishHost` (or, with `network`, reached by the container's name on that network), and the
 * workspace is a named volume that outlives the container and is removed with the sandbox. The runtime
 * runs under the engine's init (node as PID 1 would ignore SIGTERM), with the spec's resource limits.
 */
import Docker from 'dockerode';
import { isIP } from 'node:net';
import { AGENT_SERVER, type ExposedUrl } from '../../src/schemas/sandboxes';
import type { DockerRuntimeHandle as DockerHandle, RuntimeHandle } from '../../src/store/runtime-handle';
import { ProviderConfigError, wrongHandle, type RuntimeState, type SandboxProvider, type StartRequest, type StartedRuntime } from './provider';

export interface DockerProviderOptions {
  docker: Docker;
  /** Host name in exposed URLs: where published ports are reached from the service. */
  publishHost: string;
  /** Port the runtime listens on inside the container. */
  runtimePort?: number;
  /** A network the containers join; their AGENT_SERVER is then `http://<container name>:<port>` on it. */
  network?: string;
}

export const SANDBOX_LABEL = 'agent-control.sandbox-id';
const LABEL = SANDBOX_LABEL;
const DEFAULT_WORKDIR = '/workspace';
/** The runtime's conversations, under the workspace (the volume). */
const STATE_DIR = '.agent-runtime';
const MIB = 1024 * 1024;

const statusOf = (e: unknown) => (e as { statusCode?: number }).statusCode;
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
const asDocker = (h: RuntimeHandle): DockerHandle => (h.provider === 'docker' ? h : wrongHandle('docker', h));

/** Parses DOCKER_HOST (unix:///var/run/docker.sock, tcp://host:2375, http(s)://host:port) into dockerode options. */
export function dockerFromHost(dockerHost: string): Docker {
  if (dockerHost.startsWith('unix://')) return new Docker({ socketPath: dockerHost.slice('unix://'.length) });
  const url = new URL(dockerHost.replace(/^tcp:/, 'http:'));
  return new Docker({ protocol: url.protocol === 'https:' ? 'https' : 'http', host: url.hostname, port: Number(url.port || 2375) });
}

export class DockerProvider implements SandboxProvider {
  readonly name = 'docker' as const;
  private readonly runtimePort: number;

  constructor(private readonly opts: DockerProviderOptions) {
    this.runtimePort = opts.runtimePort ?? 8000;
  }

  private names(sandboxId: string) {
    return { container: `agent-control-sandbox-${sandboxId}`, volume: `agent-control-sandbox-${sandboxId}` };
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
      throw new ProviderConfigError(`the image ${image} is not on the Docker engine and pulling it failed: ${(e as Error).message}`);
    }
  }

  async start(req: StartRequest): Promise<StartedRuntime> {
    const { container: name } = this.names(req.sandboxId);
    const docker = this.opts.docker;
    let container = docker.getContainer(name);
    let info: Docker.ContainerInspectInfo | null = await container.inspect().catch((e: unknown) => notFound<Docker.ContainerInspectInfo>(e));
    // One that exited (killed from outside, or crashed) is replaced: a sandbox's state is its volume.
    if (info && !info.State.Running && !info.State.Paused && info.State.Status !== 'created') {
      await container.remove({ force: true }).catch(notFound);
      info = null;
    }
    if (!info) {
      container = await this.create(req);
      info = await container.inspect();
    }
    if (info.State.Paused) await container.unpause();
    else if (!info.State.Running) await container.start();
    info = await container.inspect();
    const handle: DockerHandle = { provider: 'docker', containerId: info.Id, container: name, volume: this.names(req.sandboxId).volume };
    return { handle, exposedUrls: [this.agentServer(name, info)] };
  }

  private agentServer(name: string, info: Docker.ContainerInspectInfo): ExposedUrl {
    if (this.opts.network) return { name: AGENT_SERVER, url: `http://${name}:${this.runtimePort}`, port: this.runtimePort };
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
    await docker.createVolume({ Name: volume, Labels: { [LABEL]: req.sandboxId } });
    const port = `${this.runtimePort}/tcp`;
    const workdir = spec.working_dir ?? DEFAULT_WORKDIR;
    const env = {
      ...spec.initial_env,
      SESSION_API_KEY: req.sessionApiKey,
      RUNTIME_HOST: '0.0.0.0',
      RUNTIME_PORT: String(this.runtimePort),
      RUNTIME_WORKING_DIR: workdir,
      // On the volume, so a replaced container finds its conversations.
      RUNTIME_STATE_DIR: `${workdir.replace(/\/+$/, '')}/${STATE_DIR}`,
      CONTROL_PLANE_URL: req.controlPlaneUrl,
    };
    const limits = {
      ...(spec.memory_mb ? { Memory: spec.memory_mb * MIB, MemorySwap: spec.memory_mb * MIB } : {}),
      ...(spec.cpus ? { NanoCpus: Math.round(spec.cpus * 1e9) } : {}),
      ...(spec.pids_limit ? { PidsLimit: spec.pids_limit } : {}),
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
          ...limits,
          Binds: [`${volume}:${workdir}`],
          ...(this.opts.network
            ? { NetworkMode: this.opts.network }
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
    const names = this.names(sandboxId);
    const ignoreMissing = (e: unknown) => {
      if (statusOf(e) !== 404) throw e;
    };
    await this.opts.docker
      .getContainer(handle ? asDocker(handle).containerId : names.container)
      .remove({ force: true, v: true })
      .catch(ignoreMissing);
    await this.opts.docker.getVolume(names.volume).remove().catch(ignoreMissing);
  }

  async inspect(handle: RuntimeHandle): Promise<RuntimeState> {
    const h = asDocker(handle);
    try {
      const info = await this.opts.docker.getContainer(h.containerId).inspect();
      if (info.State.Paused) return { state: 'paused' };
      if (info.State.Running) return { state: 'running' };
      return { state: 'missing', detail: `container ${h.container} is ${info.State.Status} (exit code ${info.State.ExitCode})` };
    } catch (e) {
      if (statusOf(e) === 404) return { state: 'missing', detail: `container ${h.container} no longer exists` };
      throw e;
    }
  }
}
