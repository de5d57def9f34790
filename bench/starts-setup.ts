/**
 * What bench:starts sets up before it measures: the api and the workers on the bench's servers, and the
 * bench user with its organization's agent settings and the one sandbox every start uses.
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from 'mongodb';
import { progress } from './report';
import { spawnApi, spawnWorker, type BenchServers } from './service-processes';
import { CONCURRENT_STARTS, FOLLOW, RUNTIME, WORKERS } from './starts-options';
import { ensureAgentServer } from '../scripts/servers/agent-server';
import { SecretBox } from '../src/auth/secret-box';
import { createServices, createStores } from '../src/composition';
import type { RuntimeClient } from '../src/sandboxes/runtime-client';
import { runtimeClient } from '../src/sandboxes/runtime-clients';
import type { SandboxView } from '../src/schemas/sandboxes';

/**
 * The api (first) and `WORKERS` workers, each worker a host of its own (WORKER_HOST, DATA_DIR, and when
 * there are several, its runtimes on 127.0.0.<2 + i>). The OpenHands agent server is installed first
 * when --runtime asks for it and it is missing.
 */
export async function startServices(
  servers: BenchServers,
  apiPort: number,
  secretsKey: string,
): Promise<ChildProcess[]> {
  const agentServer =
    RUNTIME === 'openhands' ? { OPENHANDS_AGENT_SERVER_DIR: (await ensureAgentServer(undefined, progress)).dir } : {};
  const env = servers.serviceEnv({
    API_PORT: String(apiPort),
    SECRETS_KEY: secretsKey,
    SANDBOX_IDLE_TIMEOUT_MS: '0',
    USER_MAX_CONCURRENT_STARTS: CONCURRENT_STARTS,
    USER_MAX_PENDING_STARTS: '0',
    USER_MAX_CONVERSATIONS: '0',
    START_STREAM_FOLLOW: FOLLOW,
    ...agentServer,
  });
  return [
    spawnApi(env),
    ...Array.from({ length: WORKERS }, (_, i) =>
      spawnWorker({
        ...env,
        WORKER_HOST: `bench-${i}`,
        DATA_DIR: path.join(servers.dir, `worker-${i}`),
        ...(WORKERS > 1 ? { SANDBOX_PROCESS_HOST: `127.0.0.${2 + i}` } : {}),
      }),
    ),
  ];
}

/** The bench user and their key, the shared sandbox once RUNNING, and the client of its runtime. */
export interface SharedSandbox {
  key: string;
  sandbox: SandboxView;
  runtime: RuntimeClient;
}

/**
 * Makes the bench user (with a personal organization, as the service makes them), gives the organization
 * agent settings, and starts the sandbox every start uses, through the api at `base`.
 */
export async function prepareSharedSandbox(db: Db, base: string, secretsKey: string): Promise<SharedSandbox> {
  const box = new SecretBox(secretsKey);
  const stores = createStores(db, { box });
  const orgs = createServices(stores, { box }).organizations;
  const user = await orgs.createUser('bench@example.com'); // with a personal organization, as the service makes them
  const { raw: key } = await stores.apiKeys.create(user.id, 'bench');
  const headers = { 'X-Access-Token': key, 'Content-Type': 'application/json' };
  const api = async <T>(method: string, p: string, body?: unknown): Promise<T> => {
    const r = await fetch(base + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!r.ok) throw new Error(`${method} ${p} answered ${r.status}: ${await r.text()}`);
    return r.json() as Promise<T>;
  };
  const me = await api<{ current_org_id: string }>('GET', '/api/v1/users/me');
  await api('PATCH', `/api/organizations/${me.current_org_id}`, {
    agent_settings: { agent_kind: 'platform', llm: { model: 'bench', base_url: 'http://127.0.0.1:9/v1' } },
  });
  let sandbox = await api<SandboxView>('POST', '/api/v1/sandboxes', {
    sandbox_spec_id: RUNTIME === 'openhands' ? 'local-process-openhands' : 'local-process',
  });
  while (sandbox.status !== 'RUNNING') {
    await sleep(100);
    [sandbox] = await api<[SandboxView]>('GET', `/api/v1/sandboxes?id=${sandbox.id}`);
  }
  // The runtime as the start's steps reach it: the same client, whichever agent server it is.
  const runtime = runtimeClient((await stores.sandboxes.get(sandbox.id))!, box);
  return { key, sandbox, runtime };
}
