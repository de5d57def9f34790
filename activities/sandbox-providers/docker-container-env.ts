/**
 * What the runtime in a sandbox's container is given: its environment (the built-in runtime's or the
 * OpenHands agent server's variables) and the spec's resource limits in the engine's terms.
 */
import { openHandsEnv } from './openhands-launch';
import { limitsOf, type SandboxLimits, type RuntimeStartRequest } from './provider';

/** The runtime's conversations, under the workspace (the volume). */
const STATE_DIR = '.agent-runtime';
const MIB = 1024 * 1024;

/** The container's environment: the spec's, then what the service sets (its key, port, paths). */
export function containerEnv(req: RuntimeStartRequest, workdir: string, runtimePort: number): Record<string, string> {
  const { spec } = req;
  // On the volume, so a replaced container finds its conversations.
  const stateDir = `${workdir.replace(/\/+$/, '')}/${STATE_DIR}`;
  return {
    ...spec.initial_env,
    SESSION_API_KEY: req.sessionApiKey,
    RUNTIME_HOST: '0.0.0.0',
    RUNTIME_PORT: String(runtimePort),
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
          port: runtimePort,
          sessionApiKey: req.sessionApiKey,
          controlPlaneUrl: req.controlPlaneUrl,
        })
      : {}),
  };
}

/** The spec's memory (swap none beyond it), CPUs and processes as the engine's HostConfig fields; unset ones left out. */
export function containerLimits(spec: RuntimeStartRequest['spec'], defaultLimits: SandboxLimits | undefined) {
  const { memoryMb, cpus, pidsLimit } = limitsOf(spec, defaultLimits);
  return {
    ...(memoryMb ? { Memory: memoryMb * MIB, MemorySwap: memoryMb * MIB } : {}),
    ...(cpus ? { NanoCpus: Math.round(cpus * 1e9) } : {}),
    ...(pidsLimit ? { PidsLimit: pidsLimit } : {}),
  };
}
