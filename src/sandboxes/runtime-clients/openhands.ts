/**
 * The real OpenHands agent server (PyPI openhands-agent-server, pinned in runtimes/openhands/): its
 * conversation body (an Agent with tools and an agent context, a LocalWorkspace, StaticSecrets), paths
 * absolute, git views by query, multipart uploads, and `{success}` answers whose execution status is read
 * back from the conversation.
 */
import path from 'node:path';
import type { SecretBox } from '../../auth/secret-box';
import { BadRequest, UpstreamFailed } from '../../errors';
import { normalizeEventTime } from '../../schemas/event-time';
import type { SandboxRecord } from '../../store/sandboxes-store';
import {
  RuntimeClient,
  type BashResult,
  type ConversationStart,
  type Created,
  type RunControl,
  type RuntimeAnswer,
  type RuntimeLlm,
  type RuntimeEventLog,
  type RuntimeMessage,
  textOf,
} from '../runtime-client';

const conversationPath = (id: string) => `/api/conversations/${encodeURIComponent(id)}`;

/** The tools of the SDK's default agent (openhands.tools.preset.default), without the browser. */
export const OPENHANDS_TOOLS = ['terminal', 'file_editor', 'task_tracker'] as const;

/**
 * LiteLLM names a model with its provider; a model without one that has a base URL is an
 * OpenAI-compatible endpoint (as the built-in runtime takes every model).
 */
export function litellmModel(llm: Pick<RuntimeLlm, 'model' | 'base_url'>): string {
  return llm.base_url && !llm.model.includes('/') ? `openai/${llm.model}` : llm.model;
}

/** The agent server's LLM: the fields it knows, none it would refuse. */
function agentLlm(llm: RuntimeLlm): Record<string, unknown> {
  return {
    model: litellmModel(llm),
    ...(llm.base_url ? { base_url: llm.base_url } : {}),
    ...(llm.api_key ? { api_key: llm.api_key } : {}),
    ...(llm.temperature !== null ? { temperature: llm.temperature } : {}),
    ...(llm.top_p !== null ? { top_p: llm.top_p } : {}),
    ...(llm.max_output_tokens !== null ? { max_output_tokens: llm.max_output_tokens } : {}),
    ...(llm.timeout_s ? { timeout: llm.timeout_s } : {}),
    usage_id: llm.usage_id ?? 'agent',
    stream: llm.stream,
    log_completions: llm.log_completions,
  };
}

/** A message without the control plane's id, which the agent server's body does not have. */
const messageBody = ({ id: _id, ...message }: RuntimeMessage) => message;

export class OpenHandsRuntimeClient extends RuntimeClient {
  static of(record: SandboxRecord, box: SecretBox): OpenHandsRuntimeClient {
    return new OpenHandsRuntimeClient(RuntimeClient.urlOf(record), box.open(record.session_key_sealed), record);
  }

  /** Its webhook queue lives in memory: what a crash or a refused batch lost is read back from its event search. */
  readonly eventLog: RuntimeEventLog = {
    count: async (id, timeoutMs) => {
      const a = await this.call('GET', `${conversationPath(id)}/events/count`, undefined, timeoutMs);
      return a.status === 200 && typeof a.body === 'number' && Number.isSafeInteger(a.body) && a.body >= 0
        ? a.body
        : null;
    },
    hasUserMessage: async (id, text, since, timeoutMs) => {
      const a = await this.call(
        'GET',
        `${conversationPath(id)}/events/search?kind=MessageEvent&source=user&sort_order=TIMESTAMP_DESC&limit=100`,
        undefined,
        timeoutMs,
      );
      const items = (a.body as { items?: unknown } | null)?.items;
      if (a.status !== 200 || !Array.isArray(items))
        throw new UpstreamFailed(`The sandbox's agent server did not list its messages (${a.status})`);
      return items.some((e: { timestamp?: unknown; llm_message?: { content?: unknown } } | null) => {
        const at = typeof e?.timestamp === 'string' ? normalizeEventTime(e.timestamp) : null;
        const content = e?.llm_message?.content;
        return at !== null && Date.parse(at) >= since.getTime() && Array.isArray(content) && textOf(content) === text;
      });
    },
    page: async (id, pageId, limit, timeoutMs) => {
      const query = new URLSearchParams({
        limit: String(limit),
        sort_order: 'TIMESTAMP',
        ...(pageId ? { page_id: pageId } : {}),
      });
      const a = await this.call('GET', `${conversationPath(id)}/events/search?${query}`, undefined, timeoutMs);
      const body = a.body as { items?: unknown; next_page_id?: unknown } | null;
      if (a.status !== 200 || !Array.isArray(body?.items)) return null;
      return {
        items: body.items,
        next: typeof body.next_page_id === 'string' && body.next_page_id ? body.next_page_id : null,
      };
    },
  };

  /** A message has no id in its body: the conversation service looks for an earlier attempt in its log instead. */
  readonly dropsRepeatedMessages = false;

  /** The runtime's working directory (OH_WORKSPACE_PATH), as its provider recorded it. */
  private get root(): string {
    const handle = this.record.runtime;
    if ((handle?.provider === 'process' || handle?.provider === 'docker') && handle.workspace) return handle.workspace;
    throw new UpstreamFailed(
      `the working directory of sandbox ${this.record.id}'s agent server is not known (its ${handle?.provider ?? 'missing'} runtime recorded none)`,
    );
  }

  /**
   * Paths go absolute (the agent server refuses relative ones) and stay in its working directory, as the
   * built-in runtime keeps them: a path that leaves it (`..`, another absolute path) is refused here.
   */
  private absolute(p: string): string {
    const root = this.root;
    const resolved = path.posix.resolve(root, p);
    if (resolved !== root && !resolved.startsWith(`${root}/`))
      throw new BadRequest(`path ${JSON.stringify(p)} is outside the workspace`);
    return resolved;
  }

  async bash(command: string, opts: { cwd: string; timeoutS: number }): Promise<BashResult> {
    const r = await this.call(
      'POST',
      '/api/bash/execute_bash_command',
      { command, cwd: this.absolute(opts.cwd), timeout: opts.timeoutS },
      (opts.timeoutS + 30) * 1000,
    );
    if (r.status !== 200)
      throw new Error(`the runtime refused the command (${r.status}): ${JSON.stringify(r.body).slice(0, 300)}`);
    const out = r.body as { exit_code?: number | null; stdout?: string | null; stderr?: string | null };
    const exitCode = typeof out.exit_code === 'number' ? out.exit_code : -1;
    const stderr = out.stderr ?? '';
    // -1 is its timeout, or a command it could not run (said in stderr).
    return {
      exit_code: exitCode,
      output: `${out.stdout ?? ''}${stderr}`,
      timed_out: exitCode === -1 && !stderr.startsWith('Error executing command'),
    };
  }

  async createConversation(s: ConversationStart, timeoutMs: number): Promise<Created> {
    const r = await this.call(
      'POST',
      '/api/conversations',
      {
        conversation_id: s.id,
        agent: {
          kind: 'Agent',
          llm: agentLlm(s.llm),
          tools: OPENHANDS_TOOLS.map((name) => ({ name })),
          agent_context: {
            system_message_suffix: s.systemMessageSuffix,
            skills: s.skills.map((k) => ({
              name: k.name,
              content: k.content,
              trigger: k.triggers.length ? { type: 'keyword', keywords: k.triggers } : null,
            })),
          },
        },
        workspace: { kind: 'LocalWorkspace', working_dir: this.absolute(s.workingDir) },
        initial_message: s.initialMessage && messageBody(s.initialMessage),
        max_iterations: s.maxIterations,
        confirmation_policy: { kind: s.confirmationMode ? 'AlwaysConfirm' : 'NeverConfirm' },
        secrets: Object.fromEntries(
          Object.entries(s.secrets).map(([k, value]) => [k, { kind: 'StaticSecret', value }]),
        ),
        // The control plane's SetTitle processor titles conversations; no LLM call of the server's own.
        autotitle: false,
      },
      timeoutMs,
    );
    // 201: made now; 200: it has a conversation with this id already (a retried step).
    if (r.status === 201) return { created: true };
    if (r.status === 200) return { created: false, exists: true };
    return { created: false, exists: false, refused: r };
  }

  async sendMessage(conversationId: string, message: RuntimeMessage, timeoutMs: number): Promise<RuntimeAnswer> {
    const a = await this.call('POST', `${conversationPath(conversationId)}/events`, messageBody(message), timeoutMs);
    // 429: it added the message but could not start a run now; the message is delivered all the same.
    return a.status === 429 ? { status: 200, body: { success: true } } : a;
  }

  async control(
    conversationId: string,
    action: RunControl,
    timeoutMs: number,
  ): Promise<RuntimeAnswer & { executionStatus: string | null }> {
    const a = await this.call('POST', `${conversationPath(conversationId)}/${action}`, undefined, timeoutMs);
    if (a.status !== 200) return { ...a, executionStatus: null };
    // It answers {success}; the status is the conversation's.
    const info = await this.call('GET', conversationPath(conversationId), undefined, timeoutMs);
    const status =
      info.status === 200 ? (info.body as { execution_status?: unknown } | null)?.execution_status : undefined;
    return { ...a, executionStatus: typeof status === 'string' ? status : null };
  }

  /**
   * The server keeps its LLMs by usage_id: an LLM with the usage_id the agent's has and another
   * configuration replaces it (and goes on with its metrics); an equal one is reused.
   */
  switchLlm(conversationId: string, llm: RuntimeLlm, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.call('POST', `${conversationPath(conversationId)}/switch_llm`, { llm: agentLlm(llm) }, timeoutMs);
  }

  deleteConversation(conversationId: string, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.call('DELETE', conversationPath(conversationId), undefined, timeoutMs);
  }

  git(view: 'changes' | 'diff', target: string, ref: string | undefined, timeoutMs: number): Promise<RuntimeAnswer> {
    const query = new URLSearchParams({ path: this.absolute(target), ...(ref ? { ref } : {}) });
    return this.call('GET', `/api/git/${view}?${query}`, undefined, timeoutMs);
  }

  download(filePath: string, maxBytes: number, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.fetchFile(
      `/api/file/download?path=${encodeURIComponent(this.absolute(filePath))}`,
      maxBytes,
      timeoutMs,
    );
  }

  upload(filePath: string, content: Uint8Array, timeoutMs: number): Promise<RuntimeAnswer> {
    const form = new FormData();
    form.append('file', new Blob([content]), path.posix.basename(filePath));
    return this.call('POST', `/api/file/upload?path=${encodeURIComponent(this.absolute(filePath))}`, form, timeoutMs);
  }
}
