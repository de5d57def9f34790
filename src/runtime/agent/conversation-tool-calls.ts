/**
 * The LLM's tool calls turned into what the conversation records: an action per call it can run, an
 * error the agent reads per call it cannot (unknown tool, arguments that are not JSON or do not fit the
 * tool's schema). A bad call is the agent's mistake, not the run's: it observes the error and goes on.
 */
import { text, type ActionEvent, type NewEvent } from './conversation-events';
import type { Completion, ToolCall } from './llm-protocol';
import { toolByName, AGENT_TOOLS } from './tools';
import type { AgentTool, ToolResult } from './tools/tool';

/** One call read: the action to record, or why it cannot run. */
export type ParsedToolCall =
  { action: { kind: string } & Record<string, unknown>; error: null } | { action: null; error: string };

export function parseToolCall(call: ToolCall): ParsedToolCall {
  const tool = toolByName(call.function.name);
  if (!tool)
    return {
      action: null,
      error: `Unknown tool ${JSON.stringify(call.function.name)}. Available tools: ${AGENT_TOOLS.map((t) => t.name).join(', ')}.`,
    };
  try {
    // A call without arguments may come with an empty string.
    const parsed = tool.params.safeParse(JSON.parse(call.function.arguments || '{}'));
    if (parsed.success) return { action: { kind: tool.actionKind, ...parsed.data }, error: null };
    return {
      action: null,
      error: `Invalid arguments for ${tool.name}: ${parsed.error.issues.map((is) => `${is.path.join('.') || '(arguments)'}: ${is.message}`).join('; ')}`,
    };
  } catch (e) {
    return {
      action: null,
      error: `The arguments of ${call.function.name} are not valid JSON: ${(e as Error).message}`,
    };
  }
}

/**
 * The events of an answer with tool calls, in the order they are recorded: every call's ActionEvent
 * first (its action null when it cannot run), then an AgentErrorEvent per bad call. The LLM's protocol
 * wants all the calls of one answer in one assistant message, before any tool result.
 */
export function toolCallEvents(completion: Completion): { actions: NewEvent[]; errors: NewEvent[] } {
  const actions: NewEvent[] = [];
  const errors: NewEvent[] = [];
  completion.tool_calls.forEach((call, i) => {
    const { action, error } = parseToolCall(call);
    actions.push({
      kind: 'ActionEvent',
      // The answer's text and reasoning go with its first call, once.
      thought: i === 0 && completion.content ? [text(completion.content)] : [],
      reasoning_content: i === 0 ? completion.reasoning_content : null,
      action,
      tool_name: call.function.name,
      tool_call_id: call.id,
      tool_call: { id: call.id, name: call.function.name, arguments: call.function.arguments, origin: 'completion' },
      llm_response_id: completion.id,
    });
    if (error !== null)
      errors.push({ kind: 'AgentErrorEvent', tool_name: call.function.name, tool_call_id: call.id, error });
  });
  return { actions, errors };
}

/** The recorded actions that can run (a bad call's action is null). */
export const runnable = (recorded: readonly ActionEvent[]): ActionEvent[] => recorded.filter((a) => a.action !== null);

/** The arguments of a runnable action, as its tool and the hooks get them: the recorded action without its kind. */
export function actionArgs(a: ActionEvent): Record<string, unknown> {
  const { kind: _kind, ...args } = a.action as Record<string, unknown>;
  return args;
}

/** A tool that throws (a path through a file, no permission) observes the error; the agent goes on. */
export const toolFailure = (toolName: string, e: Error): ToolResult => ({
  text: `The ${toolName} tool failed: ${e.message}`,
  isError: true,
  fields: undefined,
  finish: false,
});

/** The observation recorded for a tool's result (before its secrets are masked). */
export const observationOf = (tool: AgentTool, result: ToolResult): Record<string, unknown> => ({
  kind: tool.observationKind,
  content: [text(result.text)],
  is_error: result.isError,
  ...result.fields,
});
