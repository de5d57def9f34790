/** The built-in runtime (src/runtime/): paths relative to its working directory, ids of messages honoured. */
import type { SecretBox } from '../../auth/secret-box';
import type { SandboxRecord } from '../../store/sandboxes-store';
import {
  RuntimeClient,
  type BashResult,
  type ConversationStart,
  type Created,
  type RunControl,
  type RuntimeAnswer,
  type RuntimeLlm,
  type RuntimeMessage,
} from '../runtime-client';

const conversationPath = (id: string) => `/api/conversations/${encodeURIComponent(id)}`;

export class BuiltInRuntimeClient extends RuntimeClient {
  static of(record: SandboxRecord, box: SecretBox): BuiltInRuntimeClient {
    return new BuiltInRuntimeClient(RuntimeClient.urlOf(record), box.open(record.session_key_sealed), record);
  }

  /** Its outbox is on disk and retried until the control plane acknowledges: nothing to read back. */
  readonly eventLog = null;
  /** It keeps the ids of the messages it took. */
  readonly dropsRepeatedMessages = true;

  async bash(command: string, opts: { cwd: string; timeoutS: number }): Promise<BashResult> {
    const r = await this.call(
      'POST',
      '/api/bash/execute_bash_command',
      { command, cwd: opts.cwd, timeout: opts.timeoutS },
      (opts.timeoutS + 30) * 1000,
    );
    if (r.status !== 200)
      throw new Error(`the runtime refused the command (${r.status}): ${JSON.stringify(r.body).slice(0, 300)}`);
    return r.body as BashResult;
  }

  async createConversation(s: ConversationStart, timeoutMs: number): Promise<Created> {
    const r = await this.call(
      'POST',
      '/api/conversations',
      {
        conversation_id: s.id,
        agent: { llm: s.llm, system_message_suffix: s.systemMessageSuffix },
        workspace: { working_dir: s.workingDir },
        initial_message: s.initialMessage,
        max_iterations: s.maxIterations,
        confirmation_mode: s.confirmationMode,
        secrets: s.secrets,
        skills: s.skills,
      },
      timeoutMs,
    );
    if (r.status === 201) return { created: true };
    if (r.status === 409) return { created: false, exists: true };
    return { created: false, exists: false, refused: r };
  }

  sendMessage(conversationId: string, message: RuntimeMessage, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.call('POST', `${conversationPath(conversationId)}/events`, message, timeoutMs);
  }

  async control(
    conversationId: string,
    action: RunControl,
    timeoutMs: number,
  ): Promise<RuntimeAnswer & { executionStatus: string | null }> {
    const a = await this.call('POST', `${conversationPath(conversationId)}/${action}`, {}, timeoutMs);
    const status = (a.body as { execution_status?: unknown } | null)?.execution_status;
    return { ...a, executionStatus: typeof status === 'string' ? status : null };
  }

  switchLlm(conversationId: string, llm: RuntimeLlm, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.call('POST', `${conversationPath(conversationId)}/switch_llm`, { llm }, timeoutMs);
  }

  deleteConversation(conversationId: string, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.call('DELETE', conversationPath(conversationId), undefined, timeoutMs);
  }

  git(view: 'changes' | 'diff', target: string, ref: string | undefined, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.call(
      'GET',
      `/api/git/${view}/${encodeURIComponent(target)}${ref ? `?ref=${encodeURIComponent(ref)}` : ''}`,
      undefined,
      timeoutMs,
    );
  }

  download(filePath: string, maxBytes: number, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.fetchFile(`/api/file/download?path=${encodeURIComponent(filePath)}`, maxBytes, timeoutMs);
  }

  async upload(filePath: string, content: Uint8Array, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.call('POST', `/api/file/upload?path=${encodeURIComponent(filePath)}`, content, timeoutMs);
  }
}
