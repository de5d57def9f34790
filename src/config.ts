/**
 * The one place that reads the environment. Every process (launcher, api, worker, admin CLI) calls
 * `loadConfig()` and gets a typed, validated value, or a ConfigError naming each bad variable and the
 * form it expects.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';

const port = (what: string, min = 1) => {
  const error = `a port number for ${what} (${min}-65535${min === 0 ? '; 0 picks a free port' : ''})`;
  return z.coerce.number({ error }).int({ error }).min(min, { error }).max(65535, { error });
};

const positiveInt = (what: string) =>
  z.coerce
    .number({ error: `a positive integer (${what})` })
    .int({ error: `a positive integer (${what})` })
    .positive({
      error: `a positive integer (${what})`,
    });

const nonNegativeInt = (what: string) =>
  z.coerce
    .number({ error: `a non-negative integer (${what})` })
    .int({ error: `a non-negative integer (${what})` })
    .min(0, {
      error: `a non-negative integer (${what})`,
    });

const nonEmpty = (what: string) =>
  z
    .string()
    .trim()
    .min(1, { error: `a non-empty string (${what})` });

const hostPort = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_.\-[\]:]+:\d{1,5}$/, { error: 'host:port, such as 127.0.0.1:7233' });

const mongoUri = z
  .string()
  .trim()
  .regex(/^mongodb(\+srv)?:\/\/\S+$/, {
    error: 'a MongoDB connection string starting with mongodb:// or mongodb+srv://',
  });

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty', 'auto'] as const;

/**
 * Environment variables and their defaults. The keys are the variable names: docker-compose.yml and the
 * docs/configuration.md use exactly these (a test checks the compose file against this list).
 */
export const envSchema = z.object({
  /** Interface the api listens on. */
  API_HOST: nonEmpty('host name or IP address').default('127.0.0.1'),
  /** Port of the api (REST, websocket, /openapi.json, /docs). */
  API_PORT: port('the api', 0).default(8000),
  /**
   * The gateway's upstream (`host:port`, e.g. `api:8000`): `dist/src/gateway/main.js` listens on
   * API_HOST:API_PORT and relays each connection to one address of the host in turn (a scaled api).
   */
  GATEWAY_UPSTREAM: z
    .string()
    .regex(/^[A-Za-z0-9.-]{1,253}:\d{1,5}$/, { error: 'host:port' })
    .optional(),
  /** Connections the gateway holds at once. */
  GATEWAY_MAX_CONNECTIONS: positiveInt('connections').default(10_000),
  /** Base URL clients use to reach the api; defaults to http://API_HOST:API_PORT. */
  PUBLIC_BASE_URL: z.url({ error: 'an absolute http(s) URL' }).optional(),
  /** MongoDB connection string. Unset: the launcher starts the embedded MongoDB-wire server. */
  MONGODB_URI: mongoUri.optional(),
  /** Database name inside MONGODB_URI. */
  MONGODB_DB: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,63}$/, { error: 'a database name of 1-63 letters, digits, _ or -' })
    .default('agent_control'),
  /** How long a MongoDB operation may wait for a server before failing (ms). */
  MONGODB_SERVER_SELECTION_TIMEOUT_MS: positiveInt('milliseconds').default(5000),
  /** What the embedded FerretDB stores into: PostgreSQL (indexes, filters in SQL) or SQLite files (every query reads the whole collection). */
  FERRETDB_BACKEND: z.enum(['postgresql', 'sqlite'], { error: 'postgresql or sqlite' }).default('postgresql'),
  /**
   * The PostgreSQL server FerretDB stores into (postgres://user:password@host:port/database). Unset: the
   * launcher starts its own and sets this for the api, worker and CLI it runs. With it, the api creates
   * the indexes PostgreSQL needs for FerretDB's queries (src/store/postgres-indexes.ts).
   */
  POSTGRES_URL: z
    .string()
    .refine((v) => /^postgres(ql)?:\/\/./.test(v) && URL.canParse(v), {
      error: 'a postgres:// connection string (special characters of the password %-encoded)',
    })
    .optional(),
  /** Temporal frontend address. Unset: the launcher starts the Temporal dev server. */
  TEMPORAL_ADDRESS: hostPort.optional(),
  TEMPORAL_NAMESPACE: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/, { error: 'a Temporal namespace name (letters, digits, . _ -)' })
    .default('default'),
  TEMPORAL_TASK_QUEUE: nonEmpty('task queue name').default('agent-control'),
  /**
   * This worker's host, as the sandboxes it holds record it: its process sandboxes are acted on through
   * the task queue <TEMPORAL_TASK_QUEUE>@<WORKER_HOST>. Default: a name made once and kept in DATA_DIR
   * (worker-host), where the sandboxes' files are: workers of one DATA_DIR share it, and a worker that
   * comes back with it picks that host's sandboxes up again.
   */
  WORKER_HOST: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, { error: 'a host name (letters, digits, . _ -, at most 63)' })
    .optional(),
  /** Where the launcher keeps the embedded servers' data, keys and sandboxes. */
  DATA_DIR: nonEmpty('directory path').default('.data'),
  /** Where the server binaries built from Go modules are cached (outside the checkout). */
  SERVERS_CACHE_DIR: nonEmpty('directory path').optional(),
  /** The workflow bundle the worker loads; defaults to dist/workflow-bundle.js written by `npm run build`. */
  WORKFLOW_BUNDLE_PATH: nonEmpty('file path').optional(),
  /**
   * Where the api serves Prometheus metrics (GET /metrics), as host:port, on a listener of its own: not
   * behind the users' API keys, so keep it on loopback or a network only the scraper reaches. Unset: none.
   */
  METRICS_ADDRESS: hostPort.optional(),
  /**
   * The same for the worker: the Temporal SDK's own metrics (workflows, activities, polls). Its exporter
   * binds a literal address (IP:port, [IPv6]:port), not a host name. Unset: none.
   */
  WORKER_METRICS_ADDRESS: z
    .string()
    .trim()
    .regex(/^((\d{1,3}\.){3}\d{1,3}|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/, {
      error: 'IP:port or [IPv6]:port, such as 127.0.0.1:9464 (the exporter binds no host names)',
    })
    .optional(),
  /** Ports of the embedded servers (used only when the launcher starts them). */
  EMBEDDED_MONGODB_PORT: port('the embedded MongoDB-wire server').default(27017),
  EMBEDDED_POSTGRES_PORT: port('the embedded PostgreSQL').default(27432),
  EMBEDDED_TEMPORAL_PORT: port('the embedded Temporal frontend').default(7233),
  EMBEDDED_TEMPORAL: z.enum(['dev', 'server'], { error: 'dev or server' }).default('dev'),
  EMBEDDED_TEMPORAL_UI_PORT: port('the embedded Temporal UI').default(8233),
  LOG_LEVEL: z.enum(LOG_LEVELS, { error: `one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  /** json for machines, pretty for people; auto: pretty on a terminal, json otherwise. */
  LOG_FORMAT: z.enum(LOG_FORMATS, { error: `one of ${LOG_FORMATS.join(', ')}` }).default('auto'),
  /** Key that seals secrets at rest (AES-256-GCM): 32 random bytes, base64. `npm start` keeps one in DATA_DIR. */
  SECRETS_KEY: z
    .string()
    .trim()
    .refine((v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v) && Buffer.from(v, 'base64').length === 32, {
      error: '32 random bytes, base64-encoded (for example `openssl rand -base64 32`)',
    })
    .optional(),
  /** Largest accepted request body, in bytes. */
  MAX_BODY_BYTES: positiveInt('bytes').default(5 * 1024 * 1024),
  REQUEST_TIMEOUT_MS: positiveInt('milliseconds').default(60_000),
  /** Most events one conversation's log may hold; appends past it are refused. */
  MAX_EVENTS_PER_CONVERSATION: positiveInt('events').default(1_000_000),
  /** Per user: sandboxes starting or running at once (a create or resume past it is a 429); 0: no limit. */
  USER_MAX_RUNNING_SANDBOXES: nonNegativeInt('sandboxes').default(10),
  /** Per user: starts under way at once (more wait in line, in order); 0: no limit. */
  USER_MAX_CONCURRENT_STARTS: nonNegativeInt('starts').default(5),
  /** Per user: starts not ended, under way or in line (a start past it is a 429); 0: no limit. */
  USER_MAX_PENDING_STARTS: nonNegativeInt('starts').default(50),
  /** Per user: conversations kept, with those its unfinished starts will make (a start past it is a 429); 0: no limit. */
  USER_MAX_CONVERSATIONS: nonNegativeInt('conversations').default(1000),
  /** Per user: API keys not revoked; 0: no limit. */
  USER_MAX_API_KEYS: nonNegativeInt('keys').default(100),
  /** Per user and api process: event websockets open at once; 0: no limit. */
  USER_MAX_WEBSOCKETS: nonNegativeInt('sockets').default(100),
  /** Per organization (its members together), unless the operator set its own: sandboxes starting or running; 0: no limit. */
  ORG_MAX_RUNNING_SANDBOXES: nonNegativeInt('sandboxes').default(0),
  /** Per organization, unless the operator set its own: starts under way at once (more wait in line); 0: no limit. */
  ORG_MAX_CONCURRENT_STARTS: nonNegativeInt('starts').default(0),
  /** How often an api process looks for live events published by any process (ms). */
  LIVE_POLL_MS: positiveInt('milliseconds').default(10),
  /** The same while the process has no websocket subscriber (its own events still arrive at once) (ms). */
  LIVE_IDLE_POLL_MS: positiveInt('milliseconds').default(250),
  /** Live-channel slots (one per published batch) kept before the oldest are removed. */
  LIVE_CHANNEL_RETAIN_SLOTS: positiveInt('slots').default(100),
  /** How long /ready waits for each dependency before calling it down (ms). */
  READY_TIMEOUT_MS: positiveInt('milliseconds').default(2000),
  /** Time budget of each read of the event log (the server's maxTimeMS); past it the api answers 503 (ms). */
  EVENT_QUERY_TIMEOUT_MS: positiveInt('milliseconds').default(15_000),
  /** Grace period for in-flight work on SIGTERM before a process exits (ms). */
  SHUTDOWN_GRACE_MS: positiveInt('milliseconds').default(10_000),
  /** JSON file with an array of sandbox specs ({id, provider, image, command, working_dir, initial_env, memory_mb, cpus, pids_limit, disk_mb}) written at start-up. */
  SANDBOX_SPECS_FILE: nonEmpty('file path').optional(),
  /** Spec used when a sandbox is created without one. */
  DEFAULT_SANDBOX_SPEC_ID: nonEmpty('sandbox spec id').default('local-process'),
  /** How often a sandbox's workflow checks that its runtime answers (ms). */
  SANDBOX_HEALTH_INTERVAL_MS: positiveInt('milliseconds').default(10_000),
  /** How long a runtime may fail its checks before the sandbox turns ERROR (ms); one its provider reports gone: at once. */
  SANDBOX_HEALTH_GRACE_MS: positiveInt('milliseconds').default(30_000),
  /** How long no worker of a sandbox's host may take its calls before the sandbox turns ERROR (ms). */
  SANDBOX_HOST_LOST_MS: z.coerce
    .number({ error: 'milliseconds, at least 2000' })
    .int({ error: 'milliseconds, at least 2000' })
    .min(2000, { error: 'milliseconds, at least 2000' })
    .default(5 * 60_000),
  /**
   * The address process runtimes listen on and are reached at (their exposed URL). 127.0.0.1 keeps them
   * on this machine; with apis or workers on other hosts, this host's address they reach.
   */
  SANDBOX_PROCESS_HOST: z
    .ipv4({ error: 'an IPv4 address of this machine, such as 127.0.0.1' })
    .refine((a) => a !== '0.0.0.0' && !a.startsWith('255.') && !/^2(2[4-9]|3\d)\./.test(a), {
      error: 'one address of this machine (not 0.0.0.0, broadcast or multicast)',
    })
    .default('127.0.0.1'),
  /** A RUNNING sandbox unused this long is paused (ms); 0 never pauses. */
  SANDBOX_IDLE_TIMEOUT_MS: nonNegativeInt('milliseconds; 0 turns auto-pause off').default(30 * 60_000),
  /** How long a starting or resumed runtime has to answer /alive (ms). */
  SANDBOX_START_TIMEOUT_MS: positiveInt('milliseconds').default(60_000),
  SANDBOX_OPERATION_TIMEOUT_MS: positiveInt('milliseconds').default(60_000),
  /** How long the api waits for a worker to answer a workflow (accept an Update, answer a query) before a 503 (ms). */
  WORKFLOW_ANSWER_TIMEOUT_MS: positiveInt('milliseconds').default(10_000),
  /** A conversation's callbacks workflow with no new events for this long ends; the next event starts it again (ms). */
  CALLBACKS_IDLE_MS: positiveInt('milliseconds').default(5 * 60_000),
  /** Where sandbox runtimes report conversation events (the api as they reach it); default PUBLIC_BASE_URL. */
  SANDBOX_CONTROL_PLANE_URL: z.url({ error: 'an absolute http(s) URL' }).optional(),
  /**
   * Process sandboxes: `user` runs each as a user of its own (uid from SANDBOX_UID_RANGE) behind a
   * firewall rule, and needs root; `none` shares this machine's user among every user of the service.
   * Unset: `user` as root; otherwise none, and only the users in SANDBOX_PROCESS_USERS may start them.
   */
  SANDBOX_PROCESS_ISOLATION: z.enum(['user', 'none']).optional(),
  /** Without isolation (and without SANDBOX_PROCESS_ISOLATION=none): the users (ids or emails, comma-separated) who may start process sandboxes. */
  SANDBOX_PROCESS_USERS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => (x.includes('@') ? x.trim().toLowerCase() : x.trim()))
        .filter(Boolean),
    ),
  /**
   * Where process sandboxes live. Default: DATA_DIR/sandboxes; isolated (`user`), a directory of their
   * own under /var/lib/agent-control, so DATA_DIR stays closed to them (0700) and its parents (a
   * checkout under /root) need not be open.
   */
  SANDBOXES_DIR: nonEmpty('directory').optional(),
  /**
   * The installed OpenHands agent server (a directory scripts/servers/agent-server.ts made), which
   * sandboxes of a spec with `runtime: openhands` run; `npm start` installs it and sets this when a spec
   * needs it.
   */
  OPENHANDS_AGENT_SERVER_DIR: nonEmpty('directory').optional(),
  /**
   * Process sandboxes in a cgroup each (memory, CPU, processes; v2, or v1 as on older hosts): `auto` when
   * the worker runs as root and the hierarchy is usable (otherwise it says why, once, and runs without),
   * `on` (refuse to start without), `off`.
   */
  SANDBOX_CGROUPS: z.enum(['auto', 'on', 'off']).default('auto'),
  /** The cgroup (in each hierarchy) under which the sandboxes' cgroups are made. */
  SANDBOX_CGROUP_PARENT: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, { error: 'a cgroup name: letters, digits, _ . - (at most 64)' })
    .refine((v) => v !== '.' && v !== '..', { error: 'a cgroup name, not . or ..' })
    .default('agent-control'),
  /** The limits a sandbox spec leaves null (`0`: none): both providers. */
  SANDBOX_DEFAULT_MEMORY_MB: nonNegativeInt('MiB').default(4096),
  SANDBOX_DEFAULT_CPUS: z.coerce
    .number({ error: 'a non-negative number of cores' })
    .min(0, { error: 'a non-negative number of cores' })
    .default(1),
  SANDBOX_DEFAULT_PIDS_LIMIT: nonNegativeInt('processes and threads').default(1024),
  SANDBOX_DEFAULT_DISK_MB: nonNegativeInt('MiB').default(10240),
  /**
   * Each process sandbox on a file system of its own, of its disk_mb (an ext4 image on a loop device,
   * sparse): `auto` when the worker is root and can mount one, `on` (a start fails without), `off`.
   */
  SANDBOX_DISKS: z.enum(['auto', 'on', 'off']).default('auto'),
  /** The uids isolated process sandboxes run as (first-last), one per sandbox; nothing else on the machine may use them. */
  SANDBOX_UID_RANGE: z
    .string()
    .regex(/^\d+-\d+$/, { error: 'first-last, e.g. 3000000-3999999' })
    .transform((v) => v.split('-').map(Number) as [number, number])
    .refine(([a, b]) => a >= 1000 && b > a && b < 2 ** 32 - 1, {
      error: 'a range of uids above 999 (first < last < 4294967295)',
    })
    .default([3_000_000, 3_999_999]),
  /** Port of the demo's scripted LLM on loopback (0: any free one); `npm start -- --demo` picks one and lets isolated sandboxes reach it. */
  DEMO_LLM_PORT: nonNegativeInt('port').max(65535).default(0),
  /** host:port pairs on this machine that isolated process sandboxes may reach besides the api (a local LLM proxy), comma-separated. */
  SANDBOX_LOCAL_ALLOW: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .refine((xs) => xs.every((x) => /^(\[[0-9a-fA-F:]+\]|[^\s:[\]]+):\d{1,5}$/.test(x)), {
      error: 'host:port pairs, comma-separated',
    }),
  /**
   * Ports on this machine that isolated process sandboxes may bind but never answer on, besides the
   * service's own (api, metrics, database, Temporal, the embedded servers'), comma-separated.
   */
  SANDBOX_RESERVED_PORTS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .refine((xs) => xs.every((x) => /^\d{1,5}$/.test(x) && Number(x) >= 1 && Number(x) <= 65535), {
      error: 'port numbers (1-65535), comma-separated',
    })
    .transform((xs) => xs.map(Number)),
  /** How long a start waits for its sandbox to run (ms): 10 minutes, not the reference service's fixed 120 s. */
  START_SANDBOX_WAIT_MS: positiveInt('milliseconds').default(10 * 60_000),
  /** Bound of a repository's setup script (.agents/setup.sh) in a start (ms). */
  START_SETUP_TIMEOUT_MS: positiveInt('milliseconds').default(10 * 60_000),
  /** How long a start may wait in its user's line before it ends ERROR (ms). */
  START_QUEUE_WAIT_MS: positiveInt('milliseconds').default(30 * 60_000),
  /** How often a line held up by its user's running sandboxes looks again (ms). */
  START_QUEUE_POLL_MS: positiveInt('milliseconds').default(5_000),
  /** An unfinished start not updated for this long has its workflow checked, and started again if it was lost (ms). */
  START_TASK_RECONCILE_AFTER_MS: positiveInt('milliseconds').default(60_000),
  /**
   * How stream-start learns each new status: `workflow` waits on the start-task workflow (an Update that
   * returns when its status list grows), falling back to the stored record while no worker answers or once
   * the workflow is closed; `record` reads the stored record (a poll that backs off to 800 ms).
   */
  START_STREAM_FOLLOW: z.enum(['workflow', 'record']).default('workflow'),
  /** Where start spans go: none (tracing off), console, or otlp (OTLP over HTTP). */
  OTEL_TRACES_EXPORTER: z.enum(['none', 'console', 'otlp']).default('none'),
  /** The OTLP traces endpoint (otlp exporter); default the exporter's own (http://localhost:4318/v1/traces). */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ error: 'an absolute URL' }).optional(),
  /** REST API of git host A: GitHostAV1CallbackProcessor posts its summary comments there, the git searches read it. */
  GIT_HOST_A_API_URL: z.url({ error: 'an absolute URL' }).default('https://api.github.com'),
  /** Bound of all the calls to a git host's API one git search makes (ms). */
  GIT_HOST_API_TIMEOUT_MS: positiveInt('milliseconds').default(10_000),
  /** REST API of git host B, where GitHostBV1CallbackProcessor posts its merge request notes. */
  GIT_HOST_B_API_URL: z.url({ error: 'an absolute URL' }).default('https://gitlab.com/api/v4'),
  /** REST API of git host C, where GitHostCV1CallbackProcessor posts its pull request comments. */
  GIT_HOST_C_API_URL: z.url({ error: 'an absolute URL' }).default('https://api.bitbucket.org/2.0'),
  /** API gateway of issue tracker A's cloud sites, where IssueTrackerAV1CallbackProcessor posts its issue comments. */
  ISSUE_TRACKER_A_API_URL: z.url({ error: 'an absolute URL' }).default('https://api.atlassian.com'),
  /**
   * The servers of issue tracker B (self-hosted) an IssueTrackerBV1CallbackProcessor's `base_api_url` may
   * name: comma-separated origins (https://jira.example.com). Empty: none, so the processor is refused.
   */
  ISSUE_TRACKER_B_ORIGINS: z
    .string()
    .default('')
    .transform((v, ctx) => {
      const origins: string[] = [];
      for (const x of v
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean)) {
        const u = URL.canParse(x) ? new URL(x) : null;
        // Written as people write them (any case, a default port, a trailing slash), kept as the URL's origin.
        if (
          !u ||
          !/^https?:$/.test(u.protocol) ||
          u.username ||
          u.password ||
          u.pathname !== '/' ||
          u.search ||
          u.hash
        ) {
          ctx.addIssue({ code: 'custom', message: `origins (http(s)://host[:port], nothing after), not ${x}` });
        } else origins.push(u.origin);
      }
      return origins;
    }),
  /** Web API of the chat service, where ChatV1CallbackProcessor replies in the originating thread. */
  CHAT_API_URL: z.url({ error: 'an absolute URL' }).default('https://slack.com/api'),
  /** Where a start clones `owner/repo` repositories from. */
  GIT_CLONE_BASE_URL: z.url({ error: 'an absolute URL' }).default('https://github.com'),
  /** A sandbox workflow continues as new past this many history events; 0: when Temporal suggests it. */
  SANDBOX_HISTORY_LIMIT: nonNegativeInt('history events; 0 follows Temporal').default(0),
  /** Docker Engine API of the docker provider: unix:///path/to/docker.sock, tcp://host:port or http(s)://host:port. */
  DOCKER_HOST: z
    .string()
    .trim()
    .regex(/^(unix:\/\/\/\S+|(tcp|http|https):\/\/[^\s/]+\/?)$/, {
      error: 'unix:///var/run/docker.sock, tcp://host:port or http(s)://host:port',
    })
    .default('unix:///var/run/docker.sock'),
  /** Host name in a docker sandbox's exposed URLs: where its published ports are reached. */
  DOCKER_PUBLISH_HOST: nonEmpty('host name').default('127.0.0.1'),
  /**
   * A network docker sandboxes join (docker-compose: <project>_default): their AGENT_SERVER is then their
   * container name on it, reached by the api and worker containers, and no port is published.
   */
  DOCKER_NETWORK: nonEmpty('Docker network name').optional(),
  /**
   * With DOCKER_NETWORK: compose services (or container names) joined to each sandbox's own network
   * under their names (gateway,api,worker with docker-compose.yml), so a sandbox reaches them and
   * nothing else of the project.
   */
  DOCKER_SANDBOX_PEERS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    ),
  /** Remote runtime API of the remote provider, and its key (sent as X-API-Key). */
  REMOTE_RUNTIME_API_URL: z.url({ error: 'an absolute http(s) URL' }).optional(),
  REMOTE_RUNTIME_API_KEY: nonEmpty('API key').optional(),
  /** JSON array of the LLM models users may pick ("provider/name" strings or objects), for /api/v1/config/models/search. */
  LLM_MODELS_FILE: nonEmpty('file path').optional(),
  /** Also list the models the caller's effective LLM endpoint serves (its `/models`), asked by the api. */
  LLM_MODELS_FROM_ENDPOINT: z.enum(['true', 'false'], { error: 'true or false' }).default('false'),
});

export type Env = z.infer<typeof envSchema>;
export const ENV_VARIABLES = Object.keys(envSchema.shape) as (keyof Env)[];

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
