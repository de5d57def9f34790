/**
 * What a conversation runs in its workspace: the tools of accepted actions, with the PreToolUse hooks
 * that may block them and the PostToolUse hooks after, and the hooks of its other moments. Commands get
 * the conversation's secrets in their environment; what they report is masked before it is recorded.
 * The loop decides when something runs; this decides how.
 */
import type { Event } from '../../schemas/events';
import { rejectionOf, type ActionEvent, type NewEvent } from './conversation-events';
import { maskSecrets, secretValues } from './conversation-masking';
import type { CreateConversation } from './conversation-schemas';
import { actionArgs, observationOf, toolFailure } from './conversation-tool-calls';
import { runHooks, type HookEventType, type HookRun } from './hooks';
import { toolByName } from './tools';
import type { TaskItem, ToolContext } from './tools/tool';

export interface ActionRunnerDeps {
  conversationId: string;
  settings: CreateConversation;
  /** Absolute workspace directory of the conversation. */
  workspace: string;
  /** The command environment without the conversation's secrets. */
  baseEnv: NodeJS.ProcessEnv;
  maxOutputBytes: number;
  /** The task list the task tracker edits in place (a getter: a restore replaces it). */
  tasks: () => TaskItem[];
  /** Records an event of the conversation. */
  emit: (event: NewEvent) => Event;
}

export class ActionRunner {
  constructor(private readonly d: ActionRunnerDeps) {}

  /** Runs accepted actions in order; once the signal is aborted the rest are answered as interrupted. True when one finished the task. */
  async run(actions: readonly ActionEvent[], signal: AbortSignal): Promise<boolean> {
    let finished = false;
    for (const a of actions) finished = (await this.runOne(a, signal)) || finished;
    return finished;
  }

  /** Runs the hooks of a moment and records each run; what they report is masked like any tool output. */
  async hooks(
    type: HookEventType,
    input: Record<string, unknown>,
    action?: ActionEvent,
    signal?: AbortSignal,
  ): Promise<HookRun[]> {
    const runs = (
      await runHooks(this.d.settings.hooks, type, input, {
        cwd: this.d.workspace,
        env: this.env(),
        toolName: action?.tool_name ?? null,
        signal,
      })
    ).map((r) => this.mask(r));
    for (const r of runs) this.d.emit({ kind: 'HookExecutionEvent', ...r, action_id: action?.id ?? null });
    return runs;
  }

  private async runOne(a: ActionEvent, signal: AbortSignal): Promise<boolean> {
    const interrupted = () => this.d.emit(rejectionOf(a, 'The step was interrupted before this action ran', 'user'));
    if (signal.aborted) {
      interrupted();
      return false;
    }
    const tool = toolByName(a.tool_name)!;
    const args = actionArgs(a);
    const pre = await this.hooks(
      'PreToolUse',
      { conversation_id: this.d.conversationId, tool_name: a.tool_name, tool_input: args },
      a,
      signal,
    );
    const blocked = pre.find((h) => h.blocked);
    if (blocked) {
      this.d.emit(rejectionOf(a, blocked.reason ?? 'Blocked by a PreToolUse hook', 'hook'));
      return false;
    }
    if (signal.aborted) {
      interrupted(); // during the hooks
      return false;
    }
    const result = await tool.run(args, this.toolContext(signal)).catch((e: Error) => toolFailure(a.tool_name, e));
    const observation = this.mask(observationOf(tool, result));
    this.d.emit({
      kind: 'ObservationEvent',
      tool_name: a.tool_name,
      tool_call_id: a.tool_call_id,
      observation,
      action_id: a.id,
    });
    await this.hooks(
      'PostToolUse',
      { conversation_id: this.d.conversationId, tool_name: a.tool_name, tool_input: args, tool_response: observation },
      a,
      signal,
    );
    return Boolean(result.finish);
  }

  private env(): NodeJS.ProcessEnv {
    return { ...this.d.baseEnv, ...this.d.settings.secrets };
  }

  private toolContext(signal: AbortSignal): ToolContext {
    return {
      workspace: this.d.workspace,
      env: this.env(),
      maxOutputBytes: this.d.maxOutputBytes,
      signal,
      tasks: this.d.tasks(),
    };
  }

  private mask<T>(value: T): T {
    return maskSecrets(value, secretValues(this.d.settings));
  }
}
