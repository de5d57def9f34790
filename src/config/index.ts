/**
 * The one place that reads the environment. Every process (launcher, api, worker, admin CLI) calls
 * `loadConfig()` and gets a typed, validated value, or a ConfigError naming each bad variable and the
 * form it expects.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import type { Config } from './config-types';
import { serviceEnvFields } from './env-service';
import { sandboxEnvFields } from './env-sandboxes';

export type { Config } from './config-types';
export { LOG_FORMATS, LOG_LEVELS, type LogLevel } from './env-fields';

/**
 * Environment variables and their defaults. The keys are the variable names: docker-compose.yml and the
 * docs/configuration.md use exactly these (a test checks the compose file against this list).
 */
export const envSchema = z.object({ ...serviceEnvFields, ...sandboxEnvFields });

export type Env = z.infer<typeof envSchema>;
export const ENV_VARIABLES = Object.keys(envSchema.shape) as (keyof Env)[];

/** Variables whose values never appear in messages (keys, connection strings with passwords). */
const SENSITIVE = new Set(['SECRETS_KEY', 'MONGODB_URI', 'POSTGRES_URL', 'REMOTE_RUNTIME_API_KEY']);

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment. Throws ConfigError listing every bad variable with the form it expects. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, isTty = Boolean(process.stdout.isTTY)): Config {
  // An empty variable means "unset", as in most shells' `FOO= cmd`.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0] ?? '?');
        const shown = SENSITIVE.has(name) ? '<redacted>' : JSON.stringify(present[name]);
        return `${name}=${shown} is invalid: expected ${issue.message}`;
      }),
    );
  }
  const e = parsed.data;
  const processIsolation = e.SANDBOX_PROCESS_ISOLATION ?? (process.getuid?.() === 0 ? 'user' : 'restricted');
  return {
    api: {
      host: e.API_HOST,
      port: e.API_PORT,
      publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://${e.API_HOST}:${e.API_PORT}`).replace(/\/+$/, ''),
    },
    gateway: {
      upstream: e.GATEWAY_UPSTREAM
        ? { host: e.GATEWAY_UPSTREAM.replace(/:\d+$/, ''), port: Number(/:(\d+)$/.exec(e.GATEWAY_UPSTREAM)![1]) }
        : undefined,
      maxConnections: e.GATEWAY_MAX_CONNECTIONS,
    },
    mongo: { uri: e.MONGODB_URI, db: e.MONGODB_DB, serverSelectionTimeoutMs: e.MONGODB_SERVER_SELECTION_TIMEOUT_MS },
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      workerHost: e.WORKER_HOST,
    },
    dataDir: path.resolve(e.DATA_DIR),
    serversCacheDir: e.SERVERS_CACHE_DIR && path.resolve(e.SERVERS_CACHE_DIR),
    workflowBundlePath: e.WORKFLOW_BUNDLE_PATH && path.resolve(e.WORKFLOW_BUNDLE_PATH),
    secretsKey: e.SECRETS_KEY,
    embedded: {
      mongoPort: e.EMBEDDED_MONGODB_PORT,
      postgresPort: e.EMBEDDED_POSTGRES_PORT,
      ferretdbBackend: e.FERRETDB_BACKEND,
      temporalPort: e.EMBEDDED_TEMPORAL_PORT,
      temporalUiPort: e.EMBEDDED_TEMPORAL_UI_PORT,
      temporal: e.EMBEDDED_TEMPORAL,
    },
    postgres: { url: e.POSTGRES_URL },
    log: { level: e.LOG_LEVEL, format: e.LOG_FORMAT === 'auto' ? (isTty ? 'pretty' : 'json') : e.LOG_FORMAT },
    limits: {
      maxBodyBytes: e.MAX_BODY_BYTES,
      maxEventsPerConversation: e.MAX_EVENTS_PER_CONVERSATION,
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    },
    quotas: {
      runningSandboxes: e.USER_MAX_RUNNING_SANDBOXES || null,
      concurrentStarts: e.USER_MAX_CONCURRENT_STARTS || null,
      pendingStarts: e.USER_MAX_PENDING_STARTS || null,
      conversations: e.USER_MAX_CONVERSATIONS || null,
      apiKeys: e.USER_MAX_API_KEYS || null,
      websockets: e.USER_MAX_WEBSOCKETS || null,
    },
    organizationQuotas: {
      runningSandboxes: e.ORG_MAX_RUNNING_SANDBOXES || null,
      concurrentStarts: e.ORG_MAX_CONCURRENT_STARTS || null,
    },
    live: { pollMs: e.LIVE_POLL_MS, idlePollMs: e.LIVE_IDLE_POLL_MS, retainSlots: e.LIVE_CHANNEL_RETAIN_SLOTS },
    demoLlmPort: e.DEMO_LLM_PORT,
    readyTimeoutMs: e.READY_TIMEOUT_MS,
    eventQueryTimeoutMs: e.EVENT_QUERY_TIMEOUT_MS,
    workflowAnswerTimeoutMs: e.WORKFLOW_ANSWER_TIMEOUT_MS,
    callbacks: { idleMs: e.CALLBACKS_IDLE_MS },
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    tracing: { exporter: e.OTEL_TRACES_EXPORTER, otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT },
    models: {
      file: e.LLM_MODELS_FILE && path.resolve(e.LLM_MODELS_FILE),
      fromEndpoint: e.LLM_MODELS_FROM_ENDPOINT === 'true',
    },
    gitHosts: { timeoutMs: e.GIT_HOST_API_TIMEOUT_MS },
    callbackHosts: {
      gitHostBApiUrl: e.GIT_HOST_B_API_URL.replace(/\/+$/, ''),
      gitHostCApiUrl: e.GIT_HOST_C_API_URL.replace(/\/+$/, ''),
      issueTrackerAApiUrl: e.ISSUE_TRACKER_A_API_URL.replace(/\/+$/, ''),
      issueTrackerBOrigins: e.ISSUE_TRACKER_B_ORIGINS,
      chatApiUrl: e.CHAT_API_URL.replace(/\/+$/, ''),
    },
    metrics: { apiAddress: e.METRICS_ADDRESS, workerAddress: e.WORKER_METRICS_ADDRESS },
    starts: {
      sandboxWaitMs: e.START_SANDBOX_WAIT_MS,
      setupScriptTimeoutMs: e.START_SETUP_TIMEOUT_MS,
      queueWaitMs: e.START_QUEUE_WAIT_MS,
      queuePollMs: e.START_QUEUE_POLL_MS,
      reconcileAfterMs: e.START_TASK_RECONCILE_AFTER_MS,
      streamFollow: e.START_STREAM_FOLLOW,
      gitCloneBaseUrl: e.GIT_CLONE_BASE_URL.replace(/\/+$/, ''),
      gitHostAApiUrl: e.GIT_HOST_A_API_URL.replace(/\/+$/, ''),
    },
    sandboxes: {
      specsFile: e.SANDBOX_SPECS_FILE && path.resolve(e.SANDBOX_SPECS_FILE),
      defaultSpecId: e.DEFAULT_SANDBOX_SPEC_ID,
      healthIntervalMs: e.SANDBOX_HEALTH_INTERVAL_MS,
      healthGraceMs: e.SANDBOX_HEALTH_GRACE_MS,
      hostLostMs: e.SANDBOX_HOST_LOST_MS,
      processHost: e.SANDBOX_PROCESS_HOST,
      idleTimeoutMs: e.SANDBOX_IDLE_TIMEOUT_MS,
      startTimeoutMs: e.SANDBOX_START_TIMEOUT_MS,
      operationTimeoutMs: e.SANDBOX_OPERATION_TIMEOUT_MS,
      controlPlaneUrl: (
        e.SANDBOX_CONTROL_PLANE_URL ??
        e.PUBLIC_BASE_URL ??
        `http://${e.API_HOST}:${e.API_PORT}`
      ).replace(/\/+$/, ''),
      processIsolation,
      dir: e.SANDBOXES_DIR
        ? path.resolve(e.SANDBOXES_DIR)
        : processIsolation === 'user'
          ? path.join(
              '/var/lib/agent-control',
              createHash('sha256').update(path.resolve(e.DATA_DIR)).digest('hex').slice(0, 12),
              'sandboxes',
            )
          : path.join(path.resolve(e.DATA_DIR), 'sandboxes'),
      processUsers: e.SANDBOX_PROCESS_USERS,
      agentServerDir: e.OPENHANDS_AGENT_SERVER_DIR && path.resolve(e.OPENHANDS_AGENT_SERVER_DIR),
      uidRange: e.SANDBOX_UID_RANGE,
      cgroups: e.SANDBOX_CGROUPS,
      cgroupParent: e.SANDBOX_CGROUP_PARENT,
      defaultLimits: {
        memoryMb: e.SANDBOX_DEFAULT_MEMORY_MB || null,
        cpus: e.SANDBOX_DEFAULT_CPUS || null,
        pidsLimit: e.SANDBOX_DEFAULT_PIDS_LIMIT || null,
        diskMb: e.SANDBOX_DEFAULT_DISK_MB || null,
      },
      disks: e.SANDBOX_DISKS,
      localAllow: e.SANDBOX_LOCAL_ALLOW,
      reservedPorts: servicePorts(e),
      historyLimit: e.SANDBOX_HISTORY_LIMIT,
      dockerHost: e.DOCKER_HOST,
      dockerPublishHost: e.DOCKER_PUBLISH_HOST,
      dockerNetwork: e.DOCKER_NETWORK,
      dockerPeers: e.DOCKER_SANDBOX_PEERS,
      remote:
        e.REMOTE_RUNTIME_API_URL && e.REMOTE_RUNTIME_API_KEY
          ? { baseUrl: e.REMOTE_RUNTIME_API_URL, apiKey: e.REMOTE_RUNTIME_API_KEY }
          : undefined,
    },
  };
}

/** The port of a URL or host:port, when it names one (a URL without a port has its scheme's). */
function portIn(address: string | undefined): number[] {
  if (!address) return [];
  try {
    const u = new URL(address.includes('://') ? address : `tcp://${address}`);
    const port = Number(u.port || { 'http:': 80, 'https:': 443 }[u.protocol] || 0);
    return port ? [port] : [];
  } catch {
    return [];
  }
}

/**
 * The ports the service listens on, or reaches, on this machine: the api, its and the worker's metrics,
 * the database and Temporal (each host of a mongodb:// list), the embedded servers' ports, the local LLM
 * proxies of SANDBOX_LOCAL_ALLOW, the traces endpoint, the git host and the Docker engine, and
 * SANDBOX_RESERVED_PORTS. Sandboxes may not answer on any of them.
 */
function servicePorts(e: Env): number[] {
  const mongoHosts = /^mongodb(?:\+srv)?:\/\/(?:[^@/]*@)?([^/?]+)/.exec(e.MONGODB_URI ?? '')?.[1]?.split(',') ?? [];
  const ports = [
    e.API_PORT,
    ...portIn(e.PUBLIC_BASE_URL),
    ...portIn(e.SANDBOX_CONTROL_PLANE_URL),
    ...portIn(e.METRICS_ADDRESS),
    ...portIn(e.WORKER_METRICS_ADDRESS),
    ...portIn(e.TEMPORAL_ADDRESS),
    ...portIn(e.POSTGRES_URL),
    ...mongoHosts.flatMap((h) => (/:\d+$/.test(h) ? portIn(h) : [27017])),
    // What runtimes send keys to (a local LLM proxy), and where the service sends traces and git requests.
    ...e.SANDBOX_LOCAL_ALLOW.flatMap(portIn),
    ...portIn(e.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318'),
    ...portIn(e.GIT_CLONE_BASE_URL),
    ...(e.DOCKER_HOST.startsWith('unix:') ? [] : portIn(e.DOCKER_HOST)),
    e.EMBEDDED_MONGODB_PORT,
    e.EMBEDDED_POSTGRES_PORT,
    e.EMBEDDED_TEMPORAL_PORT,
    e.EMBEDDED_TEMPORAL_UI_PORT,
    // The real server's own services listen around its frontend (scripts/servers/temporal-server.ts portsAround).
    ...(e.EMBEDDED_TEMPORAL === 'server'
      ? Object.values(TEMPORAL_SERVER_PORT_OFFSETS)
          .flat()
          .map((d) => e.EMBEDDED_TEMPORAL_PORT + d)
      : []),
    ...e.SANDBOX_RESERVED_PORTS,
  ];
  return [...new Set(ports.filter((p) => p > 0))].sort((a, b) => a - b);
}

/**
 * Where the real Temporal server's own services listen, from its frontend's port (EMBEDDED_TEMPORAL_PORT):
 * the usual layout around 7233 (history 7234, matching 7235, worker 7239, HTTP 7243, membership 6933..).
 */
export const TEMPORAL_SERVER_PORT_OFFSETS = {
  frontendHttp: 10,
  history: 1,
  matching: 2,
  worker: 6,
  membership: [-300, -299, -298, -294],
} as const;

/** The api and worker need both servers' addresses; only the launcher may leave them unset. */
export function requireServers(config: Config): { mongoUri: string; temporalAddress: string } {
  const missing = [
    config.mongo.uri ? undefined : 'MONGODB_URI (a mongodb:// connection string)',
    config.temporal.address ? undefined : 'TEMPORAL_ADDRESS (host:port)',
  ].filter((m): m is string => m !== undefined);
  if (missing.length > 0) {
    throw new ConfigError(missing.map((m) => `${m} is required here; \`npm start\` sets it for the embedded servers`));
  }
  return { mongoUri: config.mongo.uri!, temporalAddress: config.temporal.address! };
}

/** The api and the admin CLI seal secrets; without a key they cannot start. */
export function requireSecretsKey(config: Config): string {
  if (!config.secretsKey) {
    throw new ConfigError([
      'SECRETS_KEY is required: 32 random bytes, base64 (`npm start` keeps one in DATA_DIR/secrets.key)',
    ]);
  }
  return config.secretsKey;
}
