/**
 * The typed configuration every process gets from loadConfig, made from the parsed environment. Its type,
 * `Config`, is what this mapping returns: the schema (env-schema.ts) is the one source of each value's kind.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Env } from './env-schema';
import { servicePorts } from './service-ports';

export type Config = ReturnType<typeof configFromEnv>;

/** Where isolated process sandboxes live by default: a directory per installation (DATA_DIR's hash) in it. */
export const SANDBOXES_BASE = '/var/lib/agent-control';

const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, '');

export function configFromEnv(e: Env, isTty: boolean) {
  return {
    api: {
      host: e.API_HOST,
      port: e.API_PORT,
      publicBaseUrl: withoutTrailingSlash(e.PUBLIC_BASE_URL ?? `http://${e.API_HOST}:${e.API_PORT}`),
    },
    /** The gateway in front of a scaled api (GATEWAY_*); upstream unset: no gateway is configured. */
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
      /** WORKER_HOST; unset, the worker keeps one in DATA_DIR (worker/worker-host.ts). */
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
      /** `dev`: the Temporal CLI's dev server (SQLite, with its UI); `server`: the real Temporal server on the embedded PostgreSQL. */
      temporal: e.EMBEDDED_TEMPORAL,
    },
    /** The PostgreSQL behind FerretDB, when known. */
    postgres: { url: e.POSTGRES_URL },
    log: { level: e.LOG_LEVEL, format: e.LOG_FORMAT === 'auto' ? (isTty ? 'pretty' : 'json') : e.LOG_FORMAT },
    limits: {
      maxBodyBytes: e.MAX_BODY_BYTES,
      maxEventsPerConversation: e.MAX_EVENTS_PER_CONVERSATION,
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
      answerDeadlineMs: e.ANSWER_DEADLINE_MS,
    },
    /** What one user may hold at once (USER_MAX_*); null: no limit. */
    quotas: {
      runningSandboxes: e.USER_MAX_RUNNING_SANDBOXES || null,
      concurrentStarts: e.USER_MAX_CONCURRENT_STARTS || null,
      pendingStarts: e.USER_MAX_PENDING_STARTS || null,
      conversations: e.USER_MAX_CONVERSATIONS || null,
      apiKeys: e.USER_MAX_API_KEYS || null,
      websockets: e.USER_MAX_WEBSOCKETS || null,
    },
    /** What one organization's members may hold together (ORG_MAX_*), unless the operator set its own; null: no limit. */
    organizationQuotas: {
      runningSandboxes: e.ORG_MAX_RUNNING_SANDBOXES || null,
      concurrentStarts: e.ORG_MAX_CONCURRENT_STARTS || null,
    },
    live: { pollMs: e.LIVE_POLL_MS, idlePollMs: e.LIVE_IDLE_POLL_MS, retainSlots: e.LIVE_CHANNEL_RETAIN_SLOTS },
    demoLlmPort: e.DEMO_LLM_PORT,
    readyTimeoutMs: e.READY_TIMEOUT_MS,
    eventQueryTimeoutMs: e.EVENT_QUERY_TIMEOUT_MS,
    /** How long the api waits for a worker to accept an Update or answer a query (WORKFLOW_ANSWER_TIMEOUT_MS). */
    workflowAnswerTimeoutMs: e.WORKFLOW_ANSWER_TIMEOUT_MS,
    /** Callbacks workflows: how long one waits idle before it ends (CALLBACKS_IDLE_MS). */
    callbacks: { idleMs: e.CALLBACKS_IDLE_MS },
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    tracing: { exporter: e.OTEL_TRACES_EXPORTER, otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT },
    /** Where the model catalogue comes from (LLM_MODELS_FILE, LLM_MODELS_FROM_ENDPOINT). */
    models: {
      file: e.LLM_MODELS_FILE && path.resolve(e.LLM_MODELS_FILE),
      fromEndpoint: e.LLM_MODELS_FROM_ENDPOINT === 'true',
    },
    /** The git searches' calls to git hosts (GIT_HOST_API_TIMEOUT_MS); the hosts' URLs are the starts'. */
    gitHosts: { timeoutMs: e.GIT_HOST_API_TIMEOUT_MS },
    /** Where the callback processors post (the API of each host they reach; GIT_HOST_A_API_URL is starts.gitHostAApiUrl). */
    callbackHosts: {
      gitHostBApiUrl: withoutTrailingSlash(e.GIT_HOST_B_API_URL),
      gitHostCApiUrl: withoutTrailingSlash(e.GIT_HOST_C_API_URL),
      issueTrackerAApiUrl: withoutTrailingSlash(e.ISSUE_TRACKER_A_API_URL),
      issueTrackerBOrigins: e.ISSUE_TRACKER_B_ORIGINS,
      chatApiUrl: withoutTrailingSlash(e.CHAT_API_URL),
    },
    /** host:port of each process's Prometheus listener, when it has one. */
    metrics: { apiAddress: e.METRICS_ADDRESS, workerAddress: e.WORKER_METRICS_ADDRESS },
    starts: {
      sandboxWaitMs: e.START_SANDBOX_WAIT_MS,
      setupScriptTimeoutMs: e.START_SETUP_TIMEOUT_MS,
      queueWaitMs: e.START_QUEUE_WAIT_MS,
      queuePollMs: e.START_QUEUE_POLL_MS,
      reconcileAfterMs: e.START_TASK_RECONCILE_AFTER_MS,
      streamFollow: e.START_STREAM_FOLLOW,
      gitCloneBaseUrl: withoutTrailingSlash(e.GIT_CLONE_BASE_URL),
      gitHostAApiUrl: withoutTrailingSlash(e.GIT_HOST_A_API_URL),
    },
    sandboxes: sandboxesFromEnv(e),
  };
}

function sandboxesFromEnv(e: Env) {
  const processIsolation: 'user' | 'none' | 'restricted' =
    e.SANDBOX_PROCESS_ISOLATION ?? (process.getuid?.() === 0 ? 'user' : 'restricted');
  return {
    specsFile: e.SANDBOX_SPECS_FILE && path.resolve(e.SANDBOX_SPECS_FILE),
    defaultSpecId: e.DEFAULT_SANDBOX_SPEC_ID,
    healthIntervalMs: e.SANDBOX_HEALTH_INTERVAL_MS,
    healthGraceMs: e.SANDBOX_HEALTH_GRACE_MS,
    hostLostMs: e.SANDBOX_HOST_LOST_MS,
    /** SANDBOX_PROCESS_HOST. */
    processHost: e.SANDBOX_PROCESS_HOST,
    idleTimeoutMs: e.SANDBOX_IDLE_TIMEOUT_MS,
    startTimeoutMs: e.SANDBOX_START_TIMEOUT_MS,
    /** How long pause, resume and delete wait for the sandbox's workflow to answer. */
    operationTimeoutMs: e.SANDBOX_OPERATION_TIMEOUT_MS,
    /** CONTROL_PLANE_URL of the runtimes. */
    controlPlaneUrl: withoutTrailingSlash(
      e.SANDBOX_CONTROL_PLANE_URL ?? e.PUBLIC_BASE_URL ?? `http://${e.API_HOST}:${e.API_PORT}`,
    ),
    /** user: a uid of its own per sandbox; none: shared on purpose; restricted: shared, for processUsers only. */
    processIsolation,
    /** Where process sandboxes live (SANDBOXES_DIR). */
    dir: e.SANDBOXES_DIR
      ? path.resolve(e.SANDBOXES_DIR)
      : processIsolation === 'user'
        ? path.join(
            SANDBOXES_BASE,
            createHash('sha256').update(path.resolve(e.DATA_DIR)).digest('hex').slice(0, 12),
            'sandboxes',
          )
        : path.join(path.resolve(e.DATA_DIR), 'sandboxes'),
    processUsers: e.SANDBOX_PROCESS_USERS,
    /** The installed OpenHands agent server (OPENHANDS_AGENT_SERVER_DIR), for specs with `runtime: openhands`. */
    agentServerDir: e.OPENHANDS_AGENT_SERVER_DIR && path.resolve(e.OPENHANDS_AGENT_SERVER_DIR),
    uidRange: e.SANDBOX_UID_RANGE,
    /** SANDBOX_CGROUPS. */
    cgroups: e.SANDBOX_CGROUPS,
    cgroupParent: e.SANDBOX_CGROUP_PARENT,
    /** What a spec's null limit becomes (null: none). */
    defaultLimits: {
      memoryMb: e.SANDBOX_DEFAULT_MEMORY_MB || null,
      cpus: e.SANDBOX_DEFAULT_CPUS || null,
      pidsLimit: e.SANDBOX_DEFAULT_PIDS_LIMIT || null,
      diskMb: e.SANDBOX_DEFAULT_DISK_MB || null,
    },
    /** SANDBOX_DISKS. */
    disks: e.SANDBOX_DISKS,
    localAllow: e.SANDBOX_LOCAL_ALLOW,
    /** The service's ports on this machine, which a sandbox that binds one never answers on (servicePorts). */
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
  };
}
