/** What the service's own variables are for: where it listens, its servers, logs, limits and the gateway. */
import type { ConfigReferenceEntry } from './reference';

export const SERVICE_REFERENCE: readonly ConfigReferenceEntry[] = [
  {
    variables: ['API_HOST', 'API_PORT'],
    default: '`127.0.0.1`, `8000`',
    meaning: 'where the api listens (`0`: a free port)',
  },
  {
    variables: ['PUBLIC_BASE_URL'],
    default: '`http://API_HOST:API_PORT`',
    meaning: "the api's URL as clients see it (OpenAPI `servers`)",
  },
  { variables: ['MONGODB_URI'], default: 'unset: embedded FerretDB', meaning: 'MongoDB connection string' },
  { variables: ['MONGODB_DB'], default: '`agent_control`', meaning: 'database name' },
  {
    variables: ['MONGODB_SERVER_SELECTION_TIMEOUT_MS'],
    default: '`5000`',
    meaning: 'how long an operation waits for a server',
  },
  { variables: ['TEMPORAL_ADDRESS'], default: 'unset: embedded dev server', meaning: 'Temporal frontend `host:port`' },
  {
    variables: ['TEMPORAL_NAMESPACE', 'TEMPORAL_TASK_QUEUE'],
    default: '`default`, `agent-control`',
    meaning: 'the namespace, and the task queue the api starts workflows on and the worker polls',
  },
  { variables: ['DATA_DIR'], default: '`.data`', meaning: 'data of the embedded servers, logs, sandboxes' },
  { variables: ['SERVERS_CACHE_DIR'], default: '`~/.cache/agent-control/servers`', meaning: 'built server binaries' },
  {
    variables: [
      'EMBEDDED_MONGODB_PORT',
      'EMBEDDED_POSTGRES_PORT',
      'EMBEDDED_TEMPORAL_PORT',
      'EMBEDDED_TEMPORAL_UI_PORT',
    ],
    default: '`27017`, `27432`, `7233`, `8233`',
    meaning: 'ports of the embedded servers',
  },
  {
    variables: ['FERRETDB_BACKEND'],
    default: '`postgresql`',
    meaning: 'what the embedded FerretDB stores into: `postgresql` or `sqlite`',
  },
  {
    variables: ['EMBEDDED_TEMPORAL'],
    default: '`dev`',
    meaning:
      "which Temporal the launcher runs: `dev`, the CLI's dev server (SQLite, with its UI), or `server`, the real Temporal server on the embedded PostgreSQL (see [Running in production](operations.md#running-in-production))",
  },
  {
    variables: ['POSTGRES_URL'],
    default: 'unset: `npm start` runs its own',
    meaning:
      'the PostgreSQL FerretDB stores into; `npm start` sets it for the api, worker and CLI, and the api makes the indexes PostgreSQL needs there',
  },
  {
    variables: ['WORKFLOW_BUNDLE_PATH'],
    default: '`dist/workflow-bundle.js`',
    meaning: 'the prebuilt workflow bundle the worker loads',
  },
  {
    variables: ['LOG_LEVEL', 'LOG_FORMAT'],
    default: '`info`, `auto`',
    meaning: 'pino; `auto` is readable on a terminal, JSON otherwise',
  },
  {
    variables: ['SECRETS_KEY'],
    default: '`npm start`: `DATA_DIR/secrets.key`',
    meaning: '32 random bytes, base64; seals secrets at rest (required by the api)',
  },
  { variables: ['MAX_BODY_BYTES'], default: '`5242880`', meaning: 'larger request bodies get 413' },
  {
    variables: ['REQUEST_TIMEOUT_MS'],
    default: '`60000`',
    meaning: 'time a client has to send a whole request (headers and body); slower ones get 408 and are disconnected',
  },
  {
    variables: ['ANSWER_DEADLINE_MS'],
    default: '`9000`',
    meaning:
      'time the api has to answer a request once sent (the upload of its body aside); past it a 503 with `Retry-After` (the operation may still take effect). The bounds of its store and Temporal calls sit below it',
  },
  { variables: ['MAX_EVENTS_PER_CONVERSATION'], default: '`1000000`', meaning: "cap of one conversation's event log" },
  {
    variables: ['LIVE_POLL_MS'],
    default: '`10`',
    meaning: 'how often each api process looks for live events of other processes',
  },
  {
    variables: ['LIVE_IDLE_POLL_MS'],
    default: '`250`',
    meaning: 'the same while the process has no websocket subscriber (its own events still go out at once)',
  },
  {
    variables: ['LIVE_CHANNEL_RETAIN_SLOTS'],
    default: '`100`',
    meaning: 'live-channel slots kept before the oldest are removed',
  },
  { variables: ['READY_TIMEOUT_MS'], default: '`2000`', meaning: 'bound of each `/ready` check' },
  {
    variables: ['EVENT_QUERY_TIMEOUT_MS'],
    default: '`7000`',
    meaning: 'budget of each read of the event log (`maxTimeMS`); a read past it is a 503 with `Retry-After`',
  },
  { variables: ['SHUTDOWN_GRACE_MS'], default: '`10000`', meaning: 'drain time on SIGTERM' },
  {
    variables: ['GATEWAY_UPSTREAM', 'GATEWAY_MAX_CONNECTIONS'],
    default: 'unset, `10000`',
    meaning:
      "the gateway's (`dist/src/gateway/main.js`, docker-compose's front of the scaled api): the `host:port` whose every address takes connections in turn, and the connections it holds at once; it listens on `API_HOST:API_PORT`",
  },
];
