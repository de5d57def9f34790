/**
 * Sandboxes as containers, through the Docker Engine API (dockerode). The container is named after the
 * sandbox, so a retried start finds the one it made; the runtime's port is published on a free host
 * port of `publishHost`, and the workspace is a named volume removed with the sandbox.
 */
import Docker from 'dockerode';
import { AGENT_SERVER, type ExposedUrl } from '../../src/schemas/sandboxes';
import type { DockerRuntimeHandle as DockerHandle, RuntimeHandle } from '../../src/store/runtime-handle';
import { ProviderConfigError, wrongHandle, type RuntimeState, type SandboxProvider, type StartRequest, type StartedRuntime } from './provider';

export interface DockerProviderOptions {
  docker: Docker;
  /** Host name in exposed URLs: where published ports are reached from the service. */
  publishHost: string;
  /** Port the runtime listens on inside the container. */
  runtimePort?: number;
}

const LABEL = 'agent-control.sandbox-id';
const DEFAULT_WORKDIR = '/workspace';

const statusOf = (e: unknown) => (e as { statusCode?: number }).statusCode;
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
    const stream = await this.opts.docker.pull(image);
    await new Promise<void>((resolve, reject) =>
      this.opts.docker.modem.followProgress(
        stream,
        (err: Error | null) => (err ? reject(err) : resolve()),
        () => progress?.(),
      ),
    );
  }

  async start(req: StartRequest): Promise<StartedRuntime> {
    const { image } = req.spec;
    if (!image) throw new ProviderConfigError(`spec ${req.spec.id} has no image; a docker spec needs one`);
    const { container: name, volume } = this.names(req.sandboxId);
    const docker = this.opts.docker;
    const port = `${this.runtimePort}/tcp`;
    const workdir = req.spec.working_dir ?? DEFAULT_WORKDIR;

    let container = docker.getContainer(name);
    let info = await container.inspect().catch((e: unknown) => {
      if (statusOf(e) === 404) return null;
      throw e;
    });
    if (!info) {
      await this.ensureImage(image, req.progress);
      await docker.createVolume({ Name: volume, Labels: { [LABEL]: req.sandboxId } });
      const env = { ...req.spec.initial_env, SESSION_API_KEY: req.sessionApiKey, RUNTIME_HOST: '0.0.0.0', RUNTIME_PORT: String(this.runtimePort), RUNTIME_WORKING_DIR: workdir, CONTROL_PLANE_URL: req.controlPlaneUrl };
      container = await docker.createContainer({
        name,
        Image: image,
        ...(req.spec.command ? { Cmd: req.spec.command } : {}),
        WorkingDir: workdir,
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        Labels: { [LABEL]: req.sandboxId },
        ExposedPorts: { [port]: {} },
        HostConfig: { PortBindings: { [port]: [{ HostIp: this.opts.publishHost === 'localhost' ? '127.0.0.1' : '', HostPort: '' }] }, Binds: [`${volume}:${workdir}`] },
      });
      info = await container.inspect();
    }
    if (info.State.Paused) await container.unpause();
    else if (!info.State.Running) await container.start();
    info = await container.inspect();
    const binding = info.NetworkSettings.Ports?.[port]?.[0];
    if (!binding?.HostPort) throw new Error(`container ${name} publishes no host port for ${port}`);
    const hostPort = Number(binding.HostPort);
    const exposedUrls: ExposedUrl[] = [{ name: AGENT_SERVER, url: `http://${this.opts.publishHost}:${hostPort}`, port: hostPort }];
    const handle: DockerHandle = { provider: 'docker', containerId: info.Id, container: name, volume };
    return { handle, exposedUrls };
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
