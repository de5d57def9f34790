/**
 * A sandbox's runtime as the control plane uses it: one client per agent server, whichever it is (the
 * built-in runtime or the real OpenHands agent server, runtime-clients/), so no caller knows which.
 * This file holds what they share: the address from the sandbox record, the session key opened with the
 * secrets box, and bounded calls. Every call has a deadline; a runtime that does not answer is
 * Unavailable (the api says 503 with why), never a request that hangs.
 */
import { Unavailable, UpstreamFailed } from '../errors';
import { AGENT_SERVER, SESSION_KEY_HEADER } from '../schemas/sandboxes';
import type { SendMessageRequest } from '../schemas/messages';
import type { LLMSettings } from '../schemas/organizations';
import type { SandboxRecord } from '../store/sandboxes-store';
import { readBodyAtMost } from '../read-body';

export interface RuntimeAnswer {
  status: number;
  body: unknown;
}

export interface BashResult {
  exit_code: number;
  output: string;
  timed_out: boolean;
}

/** A message as the runtime takes it: with an id, delivering the same message twice adds it once. */
export type RuntimeMessage = SendMessageRequest & { id?: string };

export type RunControl = 'pause' | 'run' | 'interrupt';

/** The text of a message's content, as a delivery by id compares an earlier attempt's. */
export const textOf = (content: readonly unknown[]) =>
  content.map((c) => String((c as { text?: unknown } | null)?.text ?? '')).join('\n');

/** A skill given to the agent: always on, or when a message holds one of its triggers. */
export interface RuntimeSkill {
  name: string;
  content: string;
  triggers: string[];
}

/** The LLM the agent uses, as the start resolved it from settings. */
export interface RuntimeLlm {
  model: string;
  base_url: string | null | undefined;
  api_key: string | null;
  temperature: number | null;
  top_p: number | null;
  max_output_tokens: number | null;
  stream: boolean;
  log_completions: boolean;
  timeout_s?: number;
  usage_id?: string;
}

/**
 * The runtime's LLM from the settings' (a start's, or a saved profile's a conversation switches to), its
 * key in the clear; `model` is the one to use (a start's llm_model may override the settings').
 */
export function runtimeLlm(llm: LLMSettings, model: string): RuntimeLlm {
  return {
    model,
    base_url: llm.base_url,
    api_key: llm.api_key || null,
    temperature: llm.temperature ?? null,
    top_p: llm.top_p ?? null,
    max_output_tokens: llm.max_output_tokens ?? null,
    stream: llm.stream ?? false,
    log_completions: llm.log_completions ?? false,
    ...(llm.timeout ? { timeout_s: Math.min(llm.timeout, 3600) } : {}),
    ...(llm.usage_id ? { usage_id: llm.usage_id } : {}),
  };
}

/** A conversation as the start creates it in the runtime. */
export interface ConversationStart {
  id: string;
  llm: RuntimeLlm;
  systemMessageSuffix: string | null;
  /** The conversation's directory, relative to the runtime's working directory. */
  workingDir: string;
  initialMessage: SendMessageRequest | null;
  maxIterations: number;
  confirmationMode: boolean;
  secrets: Record<string, string>;
  skills: RuntimeSkill[];
}

/** What creating a conversation came to: made now, there already (a retried step), or refused. */
export type Created =
  { created: true } | { created: false; exists: true } | { created: false; exists: false; refused: RuntimeAnswer };

/**
 * A runtime's own copy of a conversation's log, read back when it may have lost events on their way to
 * the control plane (the OpenHands agent server queues them in memory). Null for a runtime that never
 * loses one (the built-in runtime's outbox is on disk and retried until acknowledged).
 */
export interface RuntimeEventLog {
  count(conversationId: string, timeoutMs: number): Promise<number | null>;
  /** Whether a user message with this text was added at or after `since` (among its latest 100): a delivery by id looks for its earlier attempt. */
  hasUserMessage(conversationId: string, text: string, since: Date, timeoutMs: number): Promise<boolean>;
  /** A page of its events, oldest first; `next` continues it. */
  page(
    conversationId: string,
    pageId: string | null,
    limit: number,
    timeoutMs: number,
  ): Promise<{ items: unknown[]; next: string | null } | null>;
}

export abstract class RuntimeClient {
  protected constructor(
    readonly url: string,
    protected readonly key: string,
    protected readonly record: SandboxRecord,
  ) {}

  protected static urlOf(record: SandboxRecord): string {
    const url = record.exposed_urls.find((u) => u.name === AGENT_SERVER)?.url;
    if (!url) throw new Unavailable(`sandbox ${record.id} exposes no ${AGENT_SERVER} url (status ${record.status})`, 5);
    return url;
  }

  /** Runs a shell command in the sandbox; `cwd` relative to the runtime's working directory. */
  abstract bash(command: string, opts: { cwd: string; timeoutS: number }): Promise<BashResult>;

  abstract createConversation(start: ConversationStart, timeoutMs: number): Promise<Created>;

  /** Delivers a user message; 200 when it was taken. */
  abstract sendMessage(conversationId: string, message: RuntimeMessage, timeoutMs: number): Promise<RuntimeAnswer>;

  /** Pause, run or interrupt the agent; a 200 carries the execution status after it, when the runtime says. */
  abstract control(
    conversationId: string,
    action: RunControl,
    timeoutMs: number,
  ): Promise<RuntimeAnswer & { executionStatus: string | null }>;

  abstract deleteConversation(conversationId: string, timeoutMs: number): Promise<RuntimeAnswer>;

  /**
   * The agent's answer to a question about the conversation, nothing added to it: the agent server's
   * `ask_agent` (the built-in runtime serves the same route). 200 carries `{response}`.
   */
  askAgent(conversationId: string, question: string, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.call(
      'POST',
      `/api/conversations/${encodeURIComponent(conversationId)}/ask_agent`,
      { question },
      timeoutMs,
    );
  }

  /**
   * Swaps the LLM of the conversation's agent for the steps after this call (the agent server's
   * `switch_llm`; the built-in runtime serves the same route). Its history stays. 200 when it took it.
   */
  abstract switchLlm(conversationId: string, llm: RuntimeLlm, timeoutMs: number): Promise<RuntimeAnswer>;

  /** A git view (changes of a repository, diff of a file) of `target`, relative to the runtime's working directory. */
  abstract git(
    view: 'changes' | 'diff',
    target: string,
    ref: string | undefined,
    timeoutMs: number,
  ): Promise<RuntimeAnswer>;

  /**
   * A workspace file's text, read up to `maxBytes`: a larger one is refused (413) without reading it
   * whole. Other answers come back as the runtime gave them.
   */
  abstract download(filePath: string, maxBytes: number, timeoutMs: number): Promise<RuntimeAnswer>;

  /** Writes a file in the sandbox (relative to the runtime's working directory); answers the runtime's answer. */
  abstract upload(filePath: string, content: Uint8Array, timeoutMs: number): Promise<RuntimeAnswer>;

  /** Its copy of the log, when it can lose events on their way (see RuntimeEventLog). */
  abstract readonly eventLog: RuntimeEventLog | null;

  /** Whether a message sent again with the same `id` is added once by the runtime itself. */
  abstract readonly dropsRepeatedMessages: boolean;

  /** A JSON body, bytes as they are (application/octet-stream), or a form (multipart). */
  protected async fetch(method: string, path: string, body: unknown, timeoutMs: number): Promise<Response> {
    const bytes = body instanceof Uint8Array;
    const form = body instanceof FormData;
    try {
      return await fetch(this.url + path, {
        method,
        headers: {
          [SESSION_KEY_HEADER]: this.key,
          ...(body !== undefined && !form
            ? { 'Content-Type': bytes ? 'application/octet-stream' : 'application/json' }
            : {}),
        },
        body: body === undefined ? undefined : bytes || form ? body : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
        // A runtime never redirects: one that does is not followed anywhere (with the session key) for a caller.
        redirect: 'error',
      });
    } catch (e) {
      const why =
        (e as Error).name === 'TimeoutError'
          ? `did not answer within ${Math.round(timeoutMs / 1000)} s`
          : `could not be reached (${(e as Error).message})`;
      throw new Unavailable(`The sandbox's agent server ${why}`, 5, { cause: e });
    }
  }

  /** One call; JSON in and out (text when the answer is not JSON). A runtime that cannot be reached within `timeoutMs` is Unavailable. */
  protected async call(method: string, path: string, body: unknown, timeoutMs: number): Promise<RuntimeAnswer> {
    const res = await this.fetch(method, path, body, timeoutMs);
    const text = await readBounded(res, MAX_ANSWER_BYTES);
    if (text === null)
      throw new UpstreamFailed(`The sandbox's agent server answered with more than ${MAX_ANSWER_BYTES} bytes`);
    return { status: res.status, body: parse(text) };
  }

  /** GET of a file as text, bounded by `maxBytes` (413 past it); other answers as the runtime gave them. */
  protected async fetchFile(path: string, maxBytes: number, timeoutMs: number): Promise<RuntimeAnswer> {
    const res = await this.fetch('GET', path, undefined, timeoutMs);
    if (res.status !== 200) return { status: res.status, body: parse(await readBounded(res, MAX_ANSWER_BYTES)) };
    const text = await readBounded(res, maxBytes);
    if (text === null)
      return { status: 413, body: { detail: `The file is larger than ${maxBytes} bytes; read it in the sandbox` } };
    return { status: 200, body: text };
  }
}

/** The most of an answer a call reads (a diff of two files at the runtime's 1 MiB limit, escaped, fits). */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** The answer's text, read up to `maxBytes` (null past that); a runtime that stops sending it, or runs out of time, is Unavailable. */
async function readBounded(res: Response, maxBytes: number): Promise<string | null> {
  try {
    return await readBodyAtMost(res, maxBytes);
  } catch (e) {
    throw new Unavailable(`The sandbox's agent server stopped answering (${(e as Error).message})`, 5, { cause: e });
  }
}

/** JSON when it is JSON; the text otherwise; null for nothing. */
export function parse(text: string | null): unknown {
  if (text === null || text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
