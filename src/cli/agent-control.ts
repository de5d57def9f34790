#!/usr/bin/env node
/**
 * agent-control: start and watch agent conversations from a terminal, for the people who use the service.
 * Every call goes through the typed client (src/client); the exit code says how a command ended.
 */
import { randomUUID } from 'node:crypto';
import { startEnded } from '../schemas/app-conversations';
import { EXIT, exitCodesHelp } from './exit-codes';
import { Command, CommanderError, Option } from 'commander';
import {
  AgentControlClient,
  ApiError,
  ProtocolError,
  UnreachableError,
  unwrap,
  type Event,
  type StartRequest,
  type StartTask,
} from '../client';
import { eventLine, safeJson, terminalSafe } from './event-lines';
import { readUserConfig, userConfigPath, writeUserConfig } from './user-config';

const EXIT_HELP = `
Exit codes:
${exitCodesHelp()}

Configuration: AGENT_CONTROL_URL and AGENT_CONTROL_API_KEY, else the file written by \`agent-control login\`
(${userConfigPath()}). Prefer the variable to --api-key: a command line is visible to other processes.`;

class UsageError extends Error {}
class StartFailedError extends Error {}
/** The service answered, but holds no such thing (a lookup by id that found nothing). */
class NotFoundError extends Error {}

function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.USAGE;
  if (err instanceof StartFailedError) return EXIT.START_FAILED;
  if (err instanceof NotFoundError) return EXIT.NOT_FOUND;
  if (err instanceof UnreachableError || err instanceof ProtocolError) return EXIT.UNAVAILABLE;
  if (err instanceof ApiError) {
    if (err.status === 401 || err.status === 403) return EXIT.AUTH;
    if (err.status === 404) return EXIT.NOT_FOUND;
    if (err.status === 409) return EXIT.CONFLICT;
    if (err.status === 400 || err.status === 422) return EXIT.USAGE;
    if (err.status === 502 || err.status === 503 || err.status === 504) return EXIT.UNAVAILABLE;
  }
  return EXIT.UNEXPECTED;
}

function client(): AgentControlClient {
  const c = readUserConfig();
  if (!c.url || !c.apiKey)
    throw new UsageError(
      'no service configured: run `AGENT_CONTROL_API_KEY=... agent-control login --url URL`, or set AGENT_CONTROL_URL and AGENT_CONTROL_API_KEY',
    );
  return new AgentControlClient({ baseUrl: c.url, apiKey: c.apiKey });
}

/** One line for a person: what came from the service in it is shown escaped where a terminal would act on it. */
const out = (line: string) => process.stdout.write(`${terminalSafe(line)}\n`);
const json = (value: unknown, indent?: number) => process.stdout.write(`${safeJson(value, indent)}\n`);
/** A message for stderr, as safe as `out`. */
const note = (text: string) => process.stderr.write(`${terminalSafe(text)}\n`);

/** Aborted by the first Ctrl-C; a second one exits at once. */
function interruptSignal(): AbortController {
  const ac = new AbortController();
  process.once('SIGINT', () => {
    ac.abort();
    process.once('SIGINT', () => process.exit(EXIT.DETACHED));
  });
  return ac;
}

const finished = (e: Event) => {
  const x = e as { kind: string; key?: string; value?: unknown };
  return (
    x.kind === 'ConversationStateUpdateEvent' && (x.value === 'finished' || x.value === 'error' || x.value === 'stuck')
  );
};

async function follow(
  c: AgentControlClient,
  conversationId: string,
  o: { json?: boolean; afterId?: string; live?: boolean; untilFinished?: boolean },
  signal: AbortSignal,
) {
  for await (const e of c.events.tail(conversationId, {
    afterId: o.afterId,
    live: o.live,
    signal,
    onReconnect: (n, why) => note(`(reconnecting to the event stream, attempt ${n}: ${why})`),
  })) {
    if (e.kind === 'StreamingDeltaEvent') continue;
    if (o.json) json(e);
    else out(eventLine(e));
    if (o.untilFinished && finished(e)) return;
  }
}

const isLoopback = (host: string) => host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** The start statuses as a list: each step with the time it took, the current one live on a terminal. */
class StartProgress {
  private current: { status: string; since: number } | undefined;
  private readonly began = Date.now();
  constructor(private readonly tty: boolean) {}

  show(task: StartTask) {
    const now = Date.now();
    const status = terminalSafe(String(task.status));
    if (this.current?.status === status) return;
    if (this.current) this.finishLine(now);
    this.current = { status, since: now };
    if (startEnded(task.status)) {
      const mark = task.status === 'READY' ? '✓' : '✗';
      out(
        `  ${mark} ${status.padEnd(22)} total ${seconds(now - this.began)}${typeof task.detail === 'string' && task.detail ? `\n    ${task.detail.replace(/\n/g, '\n    ')}` : ''}`,
      );
      this.current = undefined;
    } else if (this.tty) process.stdout.write(`  … ${status}`);
  }

  private finishLine(now: number) {
    const line = `  ✓ ${this.current!.status.padEnd(22)} ${seconds(now - this.current!.since).padStart(6)}`;
    if (this.tty) process.stdout.write(`\r\x1b[2K${line}\n`);
    else out(line);
  }

  /** Ends a live line before anything else is printed. */
  interrupt() {
    if (this.tty && this.current) process.stdout.write('\n');
  }
}

/** Pages until `limit` items, the last page, or a page that cannot be the service's (empty yet not the last, or a page id seen before). */
async function listPages<T>(
  fetchPage: (pageId?: string) => Promise<{ items: T[]; next_page_id: string | null }>,
  limit: number,
  each: (item: T) => void,
) {
  let pageId: string | undefined;
  let left = limit;
  const seen = new Set<string>();
  do {
    const page = await fetchPage(pageId);
    if (!Array.isArray(page?.items)) throw new ProtocolError('the service', 'a page without items');
    for (const item of page.items.slice(0, left)) each(item);
    left -= page.items.length;
    pageId = page.next_page_id ?? undefined;
    if (pageId && (page.items.length === 0 || seen.has(pageId)))
      throw new ProtocolError(
        'the service',
        `paging does not advance (next_page_id ${JSON.stringify(pageId).slice(0, 80)})`,
      );
    if (pageId) seen.add(pageId);
  } while (pageId && left > 0);
}

const limitOption = () =>
  new Option('-n, --limit <n>', 'at most this many').default(50).argParser((v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--limit wants a positive integer, not ${v}`);
    return n;
  });
const jsonOption = () => new Option('--json', 'one JSON object per line, for scripts');

/** An `ls`-like command: pages of the service read until `--limit`, one line (or JSON object) per item. */
function listCommand<T>(
  parent: Command,
  name: string,
  fetchPage: (
    c: AgentControlClient,
    pageId: string | undefined,
    limit: number,
    args: string[],
    o: Record<string, string | undefined>,
  ) => Promise<{ items: T[]; next_page_id: string | null }>,
  line: (item: T) => string,
): Command {
  return parent
    .command(name)
    .addOption(limitOption())
    .addOption(jsonOption())
    .action(async (...given: unknown[]) => {
      const cmd = given.at(-1) as Command;
      const o = cmd.opts<{ limit: number; json?: boolean } & Record<string, string | undefined>>();
      const c = client();
      await listPages(
        (pageId) => fetchPage(c, pageId, Math.min(100, o.limit), cmd.processedArgs as string[], o),
        o.limit,
        (x) => (o.json ? json(x) : out(line(x).replace(/\s+/g, ' '))),
      );
    });
}

export function buildProgram(): Command {
  const program = new Command('agent-control')
    .description('Start and watch AI agent conversations on an agent-control service.')
    .addHelpText('after', EXIT_HELP)
    .showHelpAfterError()
    .exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });

  program
    .command('login')
    .description('check an API key against the service and keep it, with the URL, in the config file (mode 0600)')
    .requiredOption('--url <url>', 'the service, e.g. http://127.0.0.1:8000')
    .option(
      '--api-key <key>',
      'the API key (default and better: AGENT_CONTROL_API_KEY; a command line is visible to other processes)',
    )
    .action(async (o: { url: string; apiKey?: string }) => {
      const apiKey = o.apiKey ?? process.env.AGENT_CONTROL_API_KEY;
      if (!apiKey) throw new UsageError('set AGENT_CONTROL_API_KEY (or give --api-key)');
      let url: URL;
      try {
        url = new URL(o.url);
      } catch {
        throw new UsageError(`--url wants a URL such as http://127.0.0.1:8000, not ${o.url}`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new UsageError(`--url wants http or https, not ${url.protocol}`);
      if (url.protocol === 'http:' && !isLoopback(url.hostname))
        note(`warning: ${url.host} is reached over plain http: the API key crosses the network unencrypted`);
      const c = new AgentControlClient({ baseUrl: o.url, apiKey });
      const me = (await unwrap(c.api.GET('/api/v1/users/me'))) as { id?: unknown; email?: unknown } | null;
      if (typeof me?.id !== 'string')
        throw new ProtocolError(c.baseUrl, 'GET /api/v1/users/me answered no user: is this the service?');
      const file = writeUserConfig({ url: c.baseUrl, apiKey });
      out(`logged in to ${c.baseUrl} as ${typeof me.email === 'string' ? me.email : me.id}; saved in ${file}`);
    });

  program
    .command('start')
    .description(
      'start a conversation: shows each start status with its time, then follows the agent until it finishes (Ctrl-C detaches, the start goes on)',
    )
    .option('-r, --repository <owner/name>', 'the repository to work on')
    .option('-b, --branch <branch>', 'its branch')
    .requiredOption('-m, --message <text>', 'the task for the agent')
    .option('--model <model>', "the LLM model (default: your organization's)")
    .option('--title <title>', 'a title for the conversation')
    .option('--no-follow', 'exit once the conversation is READY')
    .addOption(jsonOption())
    .action(
      async (o: {
        repository?: string;
        branch?: string;
        message: string;
        model?: string;
        title?: string;
        follow: boolean;
        json?: boolean;
      }) => {
        const c = client();
        const ac = interruptSignal();
        const progress = new StartProgress(!o.json && process.stdout.isTTY === true);
        let last: StartTask | undefined;
        // Chosen here, so a detach before the first status still says how to reattach (the same id joins the start).
        const conversationId = randomUUID();
        const request: Partial<StartRequest> = {
          conversation_id: conversationId,
          selected_repository: o.repository ?? null,
          selected_branch: o.branch ?? null,
          llm_model: o.model ?? null,
          title: o.title ?? null,
          initial_message: {
            role: 'user' as const,
            content: [{ type: 'text' as const, text: o.message, cache_prompt: false }],
            run: true,
          },
        };
        for await (const task of c.startConversation(request, ac.signal)) {
          if (!last && !o.json) out(`start task ${task.id}`);
          last = task;
          if (o.json) json(task);
          else progress.show(task);
        }
        if (ac.signal.aborted) {
          progress.interrupt();
          note(`detached; the start goes on. See it with:\n  agent-control tasks show ${last?.id ?? conversationId}`);
          process.exitCode = EXIT.DETACHED;
          return;
        }
        if (!last) throw new ProtocolError(c.baseUrl, 'the start stream held no start task');
        // The progress list showed the detail; --json leaves stderr to say it.
        if (last.status === 'ERROR')
          throw new StartFailedError(
            o.json ? `the start ended in ERROR: ${last.detail ?? ''}` : 'the start ended in ERROR (its detail above)',
          );
        if (last.status !== 'READY')
          throw new UnreachableError(c.baseUrl, new Error(`the stream ended at ${last.status}`));
        if (typeof last.app_conversation_id !== 'string')
          throw new ProtocolError(c.baseUrl, 'READY without an app_conversation_id');
        if (!o.json) out(`conversation ${last.app_conversation_id} (sandbox ${last.sandbox_id})`);
        if (!o.follow) return;
        await follow(c, last.app_conversation_id, { json: o.json, untilFinished: true }, ac.signal);
        if (ac.signal.aborted) {
          note(
            `detached; the conversation goes on. Reattach with:\n  agent-control events tail ${last.app_conversation_id}`,
          );
          process.exitCode = EXIT.DETACHED;
        }
      },
    );

  program
    .command('send')
    .description('send a follow-up message to a conversation (the agent runs on it)')
    .argument('<conversation-id>')
    .argument('<message>')
    .option('--no-run', 'store the message without running the agent')
    .addOption(jsonOption())
    .action(async (id: string, message: string, o: { run: boolean; json?: boolean }) => {
      const c = client();
      const answer = await unwrap(
        c.api.POST('/api/v1/app-conversations/{conversation_id}/send-message', {
          params: { path: { conversation_id: id } },
          body: { role: 'user', content: [{ type: 'text', text: message, cache_prompt: false }], run: o.run },
        }),
      );
      if (o.json) json(answer);
      else out(`sent to ${id}`);
    });

  const events = program.command('events').description('the event log of a conversation');
  events
    .command('tail')
    .description(
      'every event of a conversation, then each new one as it comes (reconnects without gap or repeat; Ctrl-C stops)',
    )
    .argument('<conversation-id>')
    .option('--after <event-id>', 'only the events after this one')
    .option('--live', 'only events from now on')
    .option('--until-finished', 'exit when the agent finishes')
    .addOption(jsonOption())
    .action(async (id: string, o: { after?: string; live?: boolean; untilFinished?: boolean; json?: boolean }) => {
      const ac = interruptSignal();
      await follow(
        client(),
        id,
        { json: o.json, afterId: o.after, live: o.live, untilFinished: o.untilFinished },
        ac.signal,
      );
      if (ac.signal.aborted) process.exitCode = EXIT.DETACHED;
    });
  listCommand(
    events,
    'search',
    (c, pageId, limit, [id], o) => c.events.search(id!, { kind__eq: o.kind as never, page_id: pageId, limit }),
    (e) => eventLine(e as Event),
  )
    .description('stored events of a conversation, oldest first')
    .argument('<conversation-id>')
    .option('--kind <kind>', 'only events of this kind (e.g. MessageEvent)');

  const conversations = program.command('conversations').description('your conversations');
  listCommand(
    conversations,
    'ls',
    (c, pageId, limit) =>
      unwrap(
        c.api.GET('/api/v1/app-conversations/search', {
          params: { query: { sort_order: 'CREATED_AT_DESC', page_id: pageId, limit } },
        }),
      ),
    (x) =>
      `${x.id}  ${String((x as { sandbox_status?: string }).sandbox_status ?? '').padEnd(8)} ${x.created_at.slice(0, 19)}  ${x.title ?? ''}`,
  ).description('the newest first');
  conversations
    .command('show')
    .argument('<conversation-id>')
    .action(async (id: string) => {
      const c = client();
      const found = await unwrap(c.api.GET('/api/v1/app-conversations', { params: { query: { ids: [id] } } }));
      const item = Array.isArray(found) ? found[0] : undefined;
      if (!item) throw new NotFoundError(`no conversation ${id}`);
      json(item, 2);
    });

  const sandboxes = program.command('sandboxes').description('your sandboxes');
  listCommand(
    sandboxes,
    'ls',
    (c, pageId, limit) =>
      unwrap(c.api.GET('/api/v1/sandboxes/search', { params: { query: { page_id: pageId, limit } } })),
    (x) => `${x.id}  ${x.status.padEnd(8)} ${x.created_at.slice(0, 19)}`,
  );
  for (const [name, verb] of [
    ['pause', 'pause'],
    ['resume', 'resume'],
  ] as const) {
    sandboxes
      .command(name)
      .argument('<sandbox-id>')
      .action(async (id: string) => {
        const c = client();
        await unwrap(c.api.POST(`/api/v1/sandboxes/{id}/${verb}`, { params: { path: { id } } }));
        out(`${verb}d ${id}`);
      });
  }
  sandboxes
    .command('rm')
    .argument('<sandbox-id>')
    .action(async (id: string) => {
      const c = client();
      await unwrap(c.api.DELETE('/api/v1/sandboxes/{id}', { params: { path: { id } } }));
      out(`deleted ${id}`);
    });

  const tasks = program.command('tasks').description('start tasks');
  listCommand(
    tasks,
    'ls',
    (c, pageId, limit) =>
      unwrap(
        c.api.GET('/api/v1/app-conversations/start-tasks/search', {
          params: { query: { sort_order: 'CREATED_AT_DESC', page_id: pageId, limit } },
        }),
      ),
    (x) => `${x.id}  ${x.status.padEnd(22)} ${x.created_at.slice(0, 19)}  ${x.app_conversation_id ?? ''}`,
  ).description('the newest first');
  tasks
    .command('show')
    .argument('<task-id>')
    .action(async (id: string) => {
      const c = client();
      const found = await unwrap(
        c.api.GET('/api/v1/app-conversations/start-tasks', { params: { query: { ids: [id] } } }),
      );
      const task = Array.isArray(found) ? found[0] : undefined;
      if (!task) throw new NotFoundError(`no start task ${id}`);
      json(task, 2);
    });

  return program;
}

export async function main(argv = process.argv): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.OK;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    note(`agent-control: ${err instanceof Error ? err.message : String(err)}`);
    return exitCodeOf(err);
  }
}

if (require.main === module) {
  void main().then((code) => process.exit(code));
}
