/**
 * How a sandbox runs the real OpenHands agent server (spec `runtime: openhands`), as its own deployments
 * do: `python -m openhands.agent_server --host H --port N`, the session key, the control plane's webhook
 * with small batches and many retries, and every state path absolute and outside the repository (its
 * defaults are relative to its working directory, which is the user's repository). Tool preloading,
 * VS Code and VNC are off; LiteLLM reads its bundled model map instead of fetching one.
 */
import { createHmac } from 'node:crypto';
import path from 'node:path';
import type { AgentServerEnv } from '../../src/process/agent-server-env';

export interface OpenHandsLaunch {
  /** The installed environment (process provider); an image carries its own (docker provider). */
  env: AgentServerEnv | null;
  /** Where the server keeps its state (its conversations, its commands' output), outside the repository. */
  stateDir: string;
  workspace: string;
  host: string;
  port: number;
  sessionApiKey: string;
  /** The control plane's api as the sandbox reaches it. */
  controlPlaneUrl: string;
}

/** The command: the environment's Python, isolated from PYTHON* variables and from the repository on sys.path (-I), unbuffered. */
export function openHandsCommand(l: OpenHandsLaunch & { env: AgentServerEnv }): string[] {
  return [l.env.python, '-I', '-u', '-m', 'openhands.agent_server', '--host', l.host, '--port', String(l.port)];
}

/** Its variables, on top of what every runtime gets. */
export function openHandsEnv(l: OpenHandsLaunch): Record<string, string> {
  const state = l.stateDir;
  return {
    OH_SESSION_API_KEYS_0: l.sessionApiKey,
    // Seals the secrets it keeps on disk; the same for the sandbox's life, so a restarted server opens
    // what it kept (the SDK keeps it out of the agent's commands, as the session key).
    OH_SECRET_KEY: createHmac('sha256', l.sessionApiKey).update('openhands-secret-key').digest('base64url'),
    // Events go to POST {base}/events/{id}, conversation info to POST {base}/conversations, with the
    // session key as X-Session-API-Key (it adds the header itself: a key in OH_WEBHOOKS_0_HEADERS would
    // reach the agent's commands, whose environment it strips of OH_SESSION_API_KEYS_* only).
    OH_WEBHOOKS_0_BASE_URL: `${l.controlPlaneUrl}/api/v1/webhooks`,
    // Its queue is in memory: small batches sent soon lose little on a crash, and the control plane
    // fetches back what a lost or refused batch held (the event search).
    OH_WEBHOOKS_0_EVENT_BUFFER_SIZE: '10',
    OH_WEBHOOKS_0_FLUSH_DELAY: '0.2',
    OH_WEBHOOKS_0_NUM_RETRIES: '20',
    OH_WEBHOOKS_0_RETRY_DELAY: '2',
    OH_CONVERSATIONS_PATH: path.join(state, 'conversations'),
    OH_BASH_EVENTS_DIR: path.join(state, 'bash_events'),
    OH_WORKSPACE_PATH: l.workspace,
    // No config file: one in the repository (its default) would configure the server.
    OPENHANDS_AGENT_SERVER_CONFIG_PATH: path.join(state, 'agent_server_config.json'),
    OH_PRELOAD_TOOLS: 'false',
    OH_ENABLE_VSCODE: 'false',
    OH_ENABLE_VNC: 'false',
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    OPENHANDS_SUPPRESS_BANNER: '1',
    // A copied interpreter finds its libpython here; the agent's commands get the variable as it was
    // before (unset), as the SDK restores LD_LIBRARY_PATH_ORIG for them.
    ...(l.env?.libDir ? { LD_LIBRARY_PATH: l.env.libDir, LD_LIBRARY_PATH_ORIG: '' } : {}),
  };
}
