/** The environment variables of sandboxes, starts and the hosts the service calls (git hosts, issue trackers, chat, Docker, the remote runtime, LLM models). */
import { z } from 'zod';
import { commaList, positiveInt, nonNegativeInt, nonEmpty } from './env-fields';

export const sandboxEnvFields = {
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
  WORKFLOW_ANSWER_TIMEOUT_MS: positiveInt('milliseconds').default(8000),
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
  SANDBOX_PROCESS_USERS: commaList().transform((xs) => xs.map((x) => (x.includes('@') ? x.toLowerCase() : x))),
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
  /** Port of the demo's scripted LLM on loopback (0: any free one); `npm start` picks one and lets isolated sandboxes reach it. */
  DEMO_LLM_PORT: nonNegativeInt('port').max(65535).default(0),
  /** host:port pairs on this machine that isolated process sandboxes may reach besides the api (a local LLM proxy), comma-separated. */
  SANDBOX_LOCAL_ALLOW: commaList().refine((xs) => xs.every((x) => /^(\[[0-9a-fA-F:]+\]|[^\s:[\]]+):\d{1,5}$/.test(x)), {
    error: 'host:port pairs, comma-separated',
  }),
  /**
   * Ports on this machine that isolated process sandboxes may bind but never answer on, besides the
   * service's own (api, metrics, database, Temporal, the embedded servers'), comma-separated.
   */
  SANDBOX_RESERVED_PORTS: commaList()
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
  GIT_HOST_API_TIMEOUT_MS: positiveInt('milliseconds').default(8000),
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
  ISSUE_TRACKER_B_ORIGINS: commaList().transform((xs, ctx) => {
    const origins: string[] = [];
    for (const x of xs) {
      const u = URL.canParse(x) ? new URL(x) : null;
      // Written as people write them (any case, a default port, a trailing slash), kept as the URL's origin.
      if (!u || !/^https?:$/.test(u.protocol) || u.username || u.password || u.pathname !== '/' || u.search || u.hash) {
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
  DOCKER_SANDBOX_PEERS: commaList(),
  /** Remote runtime API of the remote provider, and its key (sent as X-API-Key). */
  REMOTE_RUNTIME_API_URL: z.url({ error: 'an absolute http(s) URL' }).optional(),
  REMOTE_RUNTIME_API_KEY: nonEmpty('API key').optional(),
  /** JSON array of the LLM models users may pick ("provider/name" strings or objects), for /api/v1/config/models/search. */
  LLM_MODELS_FILE: nonEmpty('file path').optional(),
  /** Also list the models the caller's effective LLM endpoint serves (its `/models`), asked by the api. */
  LLM_MODELS_FROM_ENDPOINT: z.enum(['true', 'false'], { error: 'true or false' }).default('false'),
};
