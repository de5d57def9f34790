/** The environment variables of the service's own processes: addresses, stores, Temporal, logs, limits and quotas. */
import { z } from 'zod';
import { port, positiveInt, nonNegativeInt, nonEmpty, hostPort, mongoUri, LOG_LEVELS, LOG_FORMATS } from './env-fields';

export const serviceEnvFields = {
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
  /** Time the api has to answer a request, the client's sending of its body aside; then 503 (ms). */
  ANSWER_DEADLINE_MS: positiveInt('milliseconds').default(9000),
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
  EVENT_QUERY_TIMEOUT_MS: positiveInt('milliseconds').default(7000),
  /** Grace period for in-flight work on SIGTERM before a process exits (ms). */
  SHUTDOWN_GRACE_MS: positiveInt('milliseconds').default(10_000),
};
