/**
 * What bench:sandboxes sets up before it measures: a Docker engine and the runtime image (unless
 * `--docker 0`), the sandbox specs file, and the api and the worker on the bench's servers.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { progress } from './report';
import { DOCKER, LIMITS } from './sandboxes-options';
import { spawnApi, spawnWorker, type BenchServers } from './service-processes';
import { ensureDockerEngine, type DockerEngine } from '../scripts/docker/engine';
import { buildProjectImages, ensureBaseImage } from '../scripts/docker/images';
import { SecretBox } from '../src/auth/secret-box';

export interface SandboxServices {
  /** The engine, null with `--docker 0`. */
  engine: DockerEngine | null;
  /** The runtime image the docker spec runs ('' without an engine). */
  runtimeImage: string;
  /** The api, then the worker. */
  children: ChildProcess[];
}

export async function startSandboxServices(servers: BenchServers, apiPort: number): Promise<SandboxServices> {
  let engine: DockerEngine | null = null;
  let runtimeImage = '';
  if (DOCKER) {
    progress('Docker engine and the runtime image');
    engine = await ensureDockerEngine({ say: progress });
    runtimeImage = (await buildProjectImages(engine.host, await ensureBaseImage(engine.host, progress), progress))
      .runtime;
  }
  const specsFile = path.join(servers.dir, 'specs.json');
  fs.writeFileSync(
    specsFile,
    JSON.stringify(DOCKER ? [{ id: 'docker-runtime', provider: 'docker', image: runtimeImage }] : []),
  );
  const env = servers.serviceEnv({
    API_PORT: String(apiPort),
    SECRETS_KEY: SecretBox.generateKey(),
    SANDBOX_IDLE_TIMEOUT_MS: '0',
    SANDBOX_SPECS_FILE: specsFile,
    ...(engine ? { DOCKER_HOST: engine.host } : {}),
    ...(LIMITS === 'on' ? { SANDBOX_CGROUPS: 'on', SANDBOX_DISKS: 'on' } : { SANDBOX_CGROUPS: 'off' }),
  });
  return { engine, runtimeImage, children: [spawnApi(env), spawnWorker(env)] };
}
