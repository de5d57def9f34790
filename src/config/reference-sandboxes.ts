/** What the variables of sandboxes, quotas, starts and the hosts the service calls are for. */
import type { ConfigReferenceEntry } from './reference';

export const SANDBOX_REFERENCE: readonly ConfigReferenceEntry[] = [
  {
    variables: ['SANDBOX_SPECS_FILE'],
    default: 'unset',
    meaning: 'JSON array of extra sandbox specs, written at api start-up (see [Sandboxes](sandboxes.md#sandboxes))',
  },
  {
    variables: ['DEFAULT_SANDBOX_SPEC_ID'],
    default: '`local-process`',
    meaning: 'spec of a sandbox created without one',
  },
  {
    variables: ['SANDBOX_HEALTH_INTERVAL_MS'],
    default: '`10000`',
    meaning: "how often a sandbox's workflow checks its runtime's `/alive`",
  },
  {
    variables: ['SANDBOX_HEALTH_GRACE_MS'],
    default: '`30000`',
    meaning: 'how long checks may fail before the sandbox turns `ERROR` (a runtime its provider reports gone: at once)',
  },
  {
    variables: ['WORKER_HOST'],
    default: 'made once, kept in `DATA_DIR/worker-host`',
    meaning:
      "the worker's host: the process sandboxes it places are acted on through the task queue `<TEMPORAL_TASK_QUEUE>@<WORKER_HOST>`, which only that host's workers poll (see [Running in production](operations.md#running-in-production))",
  },
  {
    variables: ['SANDBOX_HOST_LOST_MS'],
    default: '`300000`',
    meaning:
      "how long no worker of a sandbox's host may take its calls before the sandbox turns `ERROR` (at least 2000); it comes back by itself when one does",
  },
  {
    variables: ['SANDBOX_PROCESS_HOST'],
    default: '`127.0.0.1`',
    meaning:
      "the IPv4 address process runtimes listen on and are reached at; with apis or workers on other hosts, this host's address they reach",
  },
  {
    variables: ['SANDBOX_IDLE_TIMEOUT_MS'],
    default: '`1800000`',
    meaning: 'a `RUNNING` sandbox unused this long is paused; `0` never',
  },
  {
    variables: ['SANDBOX_OPERATION_TIMEOUT_MS'],
    default: '`60000`',
    meaning:
      "how long the work behind a request waits for a sandbox's pause, resume or delete once its workflow accepted it (a message to a paused conversation resumes its sandbox; a conversation's deletion deletes it); the request itself is answered within `ANSWER_DEADLINE_MS`. The sandbox routes wait until that deadline only, then answer 202 (taken, still under way)",
  },
  {
    variables: ['CALLBACKS_IDLE_MS'],
    default: '`300000`',
    meaning:
      "a conversation's callbacks workflow with no new events this long ends; the next stored event starts it again (signal-with-start)",
  },
  {
    variables: ['WORKFLOW_ANSWER_TIMEOUT_MS'],
    default: '`8000`',
    meaning:
      'how long the api waits for a worker to accept an Update (pause, resume, delete) or answer a query; then 503 with `Retry-After` saying no worker answered and the operation may still happen',
  },
  {
    variables: ['SANDBOX_CGROUPS'],
    default: '`auto`',
    meaning:
      'process sandboxes in a cgroup each (v2, or v1): `auto` when the worker is root and the hierarchy usable, `on` (a start fails without), `off`',
  },
  {
    variables: ['SANDBOX_CGROUP_PARENT'],
    default: '`agent-control`',
    meaning: "the cgroup, in each hierarchy, that holds the sandboxes' (`<parent>/<sandbox id>`)",
  },
  {
    variables: ['SANDBOX_DEFAULT_MEMORY_MB', 'SANDBOX_DEFAULT_CPUS', 'SANDBOX_DEFAULT_PIDS_LIMIT'],
    default: '`4096`, `1`, `1024`',
    meaning: 'the limits of a sandbox whose spec leaves them null, for both providers; `0`: none',
  },
  {
    variables: ['USER_MAX_RUNNING_SANDBOXES', 'USER_MAX_API_KEYS', 'USER_MAX_WEBSOCKETS'],
    default: '`10`, `100`, `100`',
    meaning:
      'what one user may hold at once: sandboxes starting or running (a create or a resume past it: 429; a start that needs a new sandbox waits in line), API keys not revoked (429), event sockets per api process (closed 4429); `0`: none',
  },
  {
    variables: ['USER_MAX_CONCURRENT_STARTS'],
    default: '`5`',
    meaning:
      "one user's starts under way at once; more wait in line, in order (see [Quotas](sandboxes.md#quotas-what-one-user-and-one-organization-may-hold)); `0`: none",
  },
  {
    variables: ['ORG_MAX_RUNNING_SANDBOXES', 'ORG_MAX_CONCURRENT_STARTS'],
    default: '`0`, `0`',
    meaning:
      "what one organization's members may hold together, unless the operator set the organization's own (`npm run admin -- org quotas`): sandboxes starting or running (429 past it; a start waits in the organization's line), starts under way (more wait in line); `0`: none",
  },
  {
    variables: ['USER_MAX_PENDING_STARTS'],
    default: '`50`',
    meaning: "one user's starts not ended, under way or in line; one more: 429; `0`: none",
  },
  {
    variables: ['USER_MAX_CONVERSATIONS'],
    default: '`1000`',
    meaning:
      "one user's conversations kept, with those its unfinished starts will make; a start past it: 429 (delete some); `0`: none",
  },
  {
    variables: ['START_QUEUE_WAIT_MS', 'START_QUEUE_POLL_MS'],
    default: '`1800000`, `5000`',
    meaning:
      "how long a start may wait in a line (its user's, then its organization's: each) before it ends `ERROR`; how often a line held up by running sandboxes looks again",
  },
  {
    variables: ['SANDBOX_DISKS', 'SANDBOX_DEFAULT_DISK_MB'],
    default: '`auto`, `10240`',
    meaning:
      'a process sandbox on a file system of its own of its `disk_mb` (see [Limits](sandboxes.md#limits-what-a-sandbox-may-use)); `0`: none',
  },
  {
    variables: ['SANDBOX_START_TIMEOUT_MS'],
    default: '`60000`',
    meaning: 'how long a started or resumed runtime has to answer `/alive`',
  },
  {
    variables: ['SANDBOX_HISTORY_LIMIT'],
    default: '`0`',
    meaning: 'continue-as-new past this many history events; `0`: when Temporal suggests it',
  },
  {
    variables: ['START_SANDBOX_WAIT_MS'],
    default: '`600000`',
    meaning: 'how long a start waits for its sandbox to run',
  },
  {
    variables: ['START_SETUP_TIMEOUT_MS'],
    default: '`600000`',
    meaning: "bound of a repository's `.agents/setup.sh` in a start",
  },
  {
    variables: ['START_STREAM_FOLLOW'],
    default: '`workflow`',
    meaning:
      'how stream-start learns each new status: `workflow` waits on the start-task workflow (an Update it answers when its status list grows), `record` reads the stored record with a backoff (see [Starting conversations](api.md#starting-conversations))',
  },
  {
    variables: ['START_TASK_RECONCILE_AFTER_MS'],
    default: '`60000`',
    meaning:
      'an unfinished start not updated this long has its workflow checked: started again from its record when Temporal lost it, `ERROR` when it was ended from outside',
  },
  {
    variables: ['GIT_CLONE_BASE_URL'],
    default: '`https://github.com`',
    meaning: 'where a start clones `owner/repo` from (a URL or a path is cloned as given)',
  },
  {
    variables: ['GIT_HOST_A_API_URL'],
    default: '`https://api.github.com`',
    meaning:
      'REST API of git host A: the GitHostAV1 callback posts its summary comment there, the git searches read it',
  },
  {
    variables: ['GIT_HOST_B_API_URL'],
    default: '`https://gitlab.com/api/v4`',
    meaning: 'REST API of git host B: the GitHostBV1 callback posts its merge request notes there',
  },
  {
    variables: ['GIT_HOST_C_API_URL'],
    default: '`https://api.bitbucket.org/2.0`',
    meaning: 'REST API of git host C: the GitHostCV1 callback posts its pull request comments there',
  },
  {
    variables: ['ISSUE_TRACKER_A_API_URL'],
    default: '`https://api.atlassian.com`',
    meaning:
      "API gateway of issue tracker A's cloud sites: the IssueTrackerAV1 callback posts its issue comments there",
  },
  {
    variables: ['ISSUE_TRACKER_B_ORIGINS'],
    default: 'empty',
    meaning:
      'comma-separated origins (`https://jira.example.com`) of the self-hosted issue tracker B servers an IssueTrackerBV1 callback may name in `base_api_url`; empty: none (such a start is a 422)',
  },
  {
    variables: ['CHAT_API_URL'],
    default: '`https://slack.com/api`',
    meaning: 'Web API of the chat service: the ChatV1 callback replies in threads there',
  },
  {
    variables: ['GIT_HOST_API_TIMEOUT_MS'],
    default: '`8000`',
    meaning: 'bound of all the calls one git search makes to the git host; past it a 503 with `Retry-After`',
  },
  {
    variables: ['OTEL_TRACES_EXPORTER', 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    default: "`none`, the exporter's",
    meaning: 'where start spans go: `none`, `console` or `otlp` (OTLP over HTTP)',
  },
  {
    variables: ['METRICS_ADDRESS', 'WORKER_METRICS_ADDRESS'],
    default: 'unset',
    meaning: "host:port of the api's and the worker's Prometheus listeners (see [Metrics](operations.md#metrics))",
  },
  {
    variables: ['SANDBOX_CONTROL_PLANE_URL'],
    default: '`PUBLIC_BASE_URL`',
    meaning:
      'where sandbox runtimes post their events (the api as *they* reach it; compose sets `http://gateway:8000`)',
  },
  {
    variables: ['DOCKER_HOST', 'DOCKER_PUBLISH_HOST'],
    default: '`unix:///var/run/docker.sock`, `127.0.0.1`',
    meaning:
      'Engine API of the docker provider; host in its exposed URLs (published ports bind to it when it is an address)',
  },
  {
    variables: ['SANDBOX_PROCESS_ISOLATION'],
    default: '`user` as root, else unset',
    meaning:
      '`user`: a uid and a firewall rule per process sandbox (root only); `none`: shared on purpose; unset and not root: only `SANDBOX_PROCESS_USERS` may start process sandboxes (see [Isolation](sandboxes.md#isolation-what-a-sandbox-may-reach))',
  },
  {
    variables: ['SANDBOX_PROCESS_USERS'],
    default: 'empty',
    meaning: 'Users (ids or emails, comma-separated) allowed process sandboxes when they are not isolated',
  },
  {
    variables: ['SANDBOXES_DIR'],
    default: '`DATA_DIR/sandboxes`; isolated: `/var/lib/agent-control/<hash>/sandboxes`',
    meaning:
      "Where process sandboxes live; isolated, outside DATA_DIR and under directories only root may change (none a user owns, none its group or others may write but a sticky one such as /tmp above a directory of root's): the worker refuses others",
  },
  {
    variables: ['OPENHANDS_AGENT_SERVER_DIR'],
    default: 'set by `npm start` when a spec runs `openhands`',
    meaning:
      'The installed OpenHands agent server (`node dist/scripts/servers/agent-server.js` installs one and prints it)',
  },
  {
    variables: ['SANDBOX_UID_RANGE'],
    default: '`3000000-3999999`',
    meaning: 'The uids of isolated process sandboxes; one range per installation on a machine',
  },
  {
    variables: ['SANDBOX_LOCAL_ALLOW'],
    default: 'empty',
    meaning:
      '`host:port` pairs on this machine isolated process sandboxes may reach besides the api (a local LLM proxy)',
  },
  {
    variables: ['SANDBOX_RESERVED_PORTS'],
    default: 'empty',
    meaning:
      "ports on this machine on which isolated process sandboxes never answer, besides the service's own (api, metrics, database, Temporal, the embedded servers'), comma-separated",
  },
  {
    variables: ['DOCKER_SANDBOX_PEERS'],
    default: 'empty',
    meaning:
      "With `DOCKER_NETWORK`: services (or containers) joined by name to each sandbox's own network (`gateway,api,worker` with docker-compose.yml: the runtimes post to the gateway)",
  },
  {
    variables: ['DOCKER_NETWORK'],
    default: 'unset',
    meaning:
      'A network docker sandboxes join, reached by container name, nothing published (compose: `<project>_default`)',
  },
  {
    variables: ['REMOTE_RUNTIME_API_URL', 'REMOTE_RUNTIME_API_KEY'],
    default: 'unset',
    meaning: 'runtime API of the remote provider (key sent as `X-API-Key`)',
  },
  {
    variables: ['LLM_MODELS_FILE'],
    default: 'unset',
    meaning:
      'JSON array of the LLM models users may pick (`/api/v1/config/models/search`; see [Your own settings, secrets and models](api.md#your-own-settings-secrets-and-models))',
  },
  {
    variables: ['LLM_MODELS_FROM_ENDPOINT'],
    default: '`false`',
    meaning: "`true`: also list what the caller's LLM endpoint serves at `<base_url>/models` (the api calls that URL)",
  },
  {
    variables: ['DEMO_LLM_PORT'],
    default: '`0`: a free port (`npm start` picks one and lets sandboxes reach it)',
    meaning:
      'the port of the scripted LLM that `agent-control-admin demo` runs for its conversation; isolated sandboxes reach it only when SANDBOX_LOCAL_ALLOW allows it, as `npm start` does',
  },
];
