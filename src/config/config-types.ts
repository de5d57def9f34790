/** The typed configuration every process gets from loadConfig. */
import type { LogLevel } from './env-fields';

export interface Config {
  api: { host: string; port: number; publicBaseUrl: string };
  /** The gateway in front of a scaled api (GATEWAY_*); upstream unset: no gateway is configured. */
  gateway: { upstream: { host: string; port: number } | undefined; maxConnections: number };
  mongo: { uri: string | undefined; db: string; serverSelectionTimeoutMs: number };
  /** `workerHost`: WORKER_HOST; unset, the worker keeps one in DATA_DIR (worker/worker-host.ts). */
  temporal: { address: string | undefined; namespace: string; taskQueue: string; workerHost: string | undefined };
  dataDir: string;
  serversCacheDir: string | undefined;
  workflowBundlePath: string | undefined;
  secretsKey: string | undefined;
  embedded: {
    mongoPort: number;
    postgresPort: number;
    temporalPort: number;
    temporalUiPort: number;
    /** `dev`: the Temporal CLI's dev server (SQLite, with its UI); `server`: the real Temporal server on the embedded PostgreSQL. */
    temporal: 'dev' | 'server';
    ferretdbBackend: 'postgresql' | 'sqlite';
  };
  /** The PostgreSQL behind FerretDB, when known. */
  postgres: { url: string | undefined };
  log: { level: LogLevel; format: 'json' | 'pretty' };
  limits: { maxBodyBytes: number; maxEventsPerConversation: number; requestTimeoutMs: number };
  /** What one user may hold at once (USER_MAX_*); null: no limit. */
  quotas: {
    runningSandboxes: number | null;
    concurrentStarts: number | null;
    pendingStarts: number | null;
    conversations: number | null;
    apiKeys: number | null;
    websockets: number | null;
  };
  /** What one organization's members may hold together (ORG_MAX_*), unless the operator set its own; null: no limit. */
  organizationQuotas: { runningSandboxes: number | null; concurrentStarts: number | null };
  live: { pollMs: number; idlePollMs: number; retainSlots: number };
  demoLlmPort: number;
  readyTimeoutMs: number;
  eventQueryTimeoutMs: number;
  /** How long the api waits for a worker to accept an Update or answer a query (WORKFLOW_ANSWER_TIMEOUT_MS). */
  workflowAnswerTimeoutMs: number;
  /** Callbacks workflows: how long one waits idle before it ends (CALLBACKS_IDLE_MS). */
  callbacks: { idleMs: number };
  shutdownGraceMs: number;
  starts: {
    sandboxWaitMs: number;
    setupScriptTimeoutMs: number;
    queueWaitMs: number;
    queuePollMs: number;
    reconcileAfterMs: number;
    streamFollow: 'workflow' | 'record';
    gitCloneBaseUrl: string;
    gitHostAApiUrl: string;
  };
  tracing: { exporter: 'none' | 'console' | 'otlp'; otlpEndpoint: string | undefined };
  /** Where the model catalogue comes from (LLM_MODELS_FILE, LLM_MODELS_FROM_ENDPOINT). */
  models: { file: string | undefined; fromEndpoint: boolean };
  /** The git searches' calls to git hosts (GIT_HOST_API_TIMEOUT_MS); the hosts' URLs are the starts'. */
  gitHosts: { timeoutMs: number };
  /** Where the callback processors post (the API of each host they reach; GIT_HOST_A_API_URL is starts.gitHostAApiUrl). */
  callbackHosts: {
    gitHostBApiUrl: string;
    gitHostCApiUrl: string;
    issueTrackerAApiUrl: string;
    issueTrackerBOrigins: string[];
    chatApiUrl: string;
  };
  /** host:port of each process's Prometheus listener, when it has one. */
  metrics: { apiAddress: string | undefined; workerAddress: string | undefined };
  sandboxes: {
    specsFile: string | undefined;
    defaultSpecId: string;
    healthIntervalMs: number;
    healthGraceMs: number;
    hostLostMs: number;
    /** SANDBOX_PROCESS_HOST. */
    processHost: string;
    idleTimeoutMs: number;
    startTimeoutMs: number;
    /** How long pause, resume and delete wait for the sandbox's workflow to answer. */
    operationTimeoutMs: number;
    /** CONTROL_PLANE_URL of the runtimes. */
    controlPlaneUrl: string;
    /** user: a uid of its own per sandbox; none: shared on purpose; restricted: shared, for processUsers only. */
    processIsolation: 'user' | 'none' | 'restricted';
    /** Where process sandboxes live (SANDBOXES_DIR). */
    dir: string;
    processUsers: string[];
    /** The installed OpenHands agent server (OPENHANDS_AGENT_SERVER_DIR), for specs with `runtime: openhands`. */
    agentServerDir: string | undefined;
    uidRange: [number, number];
    /** SANDBOX_CGROUPS. */
    cgroups: 'auto' | 'on' | 'off';
    cgroupParent: string;
    /** What a spec's null limit becomes (null: none). */
    defaultLimits: { memoryMb: number | null; cpus: number | null; pidsLimit: number | null; diskMb: number | null };
    /** SANDBOX_DISKS. */
    disks: 'auto' | 'on' | 'off';
    localAllow: string[];
    /** The service's ports on this machine, which a sandbox that binds one never answers on (servicePorts). */
    reservedPorts: number[];
    historyLimit: number;
    dockerHost: string;
    dockerPublishHost: string;
    dockerNetwork: string | undefined;
    dockerPeers: string[];
    remote: { baseUrl: string; apiKey: string } | undefined;
  };
}
