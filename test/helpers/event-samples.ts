/** One minimal valid event of each of the 19 kinds (only required fields), for tests and benchmarks. */
import { randomUUID } from 'node:crypto';
import type { EventKind } from '../../src/schemas/events';

const text = (t: string) => ({ text: t });

export const MINIMAL: Record<EventKind, Record<string, unknown>> = {
  ServerErrorEvent: { source: 'environment', code: 'ToolServerDown', detail: 'MCP server unreachable' },
  ACPToolCallEvent: { tool_call_id: 'tc1', title: 'run tests' },
  Condensation: { llm_response_id: 'r1' },
  CondensationRequest: {},
  CondensationSummaryEvent: { summary: 'so far' },
  ConversationErrorEvent: { source: 'environment', code: 'Crash', detail: 'run loop failed' },
  ConversationStateUpdateEvent: { key: 'execution_status', value: 'running' },
  HookExecutionEvent: { hook_event_type: 'PreToolUse', hook_command: './check.sh', success: true, exit_code: 0 },
  LLMCompletionLogEvent: { filename: 'a.json', log_data: '{}' },
  ActionEvent: {
    thought: [text('look')],
    tool_name: 'terminal',
    tool_call_id: 'call_1',
    tool_call: { id: 'call_1', name: 'terminal', arguments: '{"command":"ls"}' },
    llm_response_id: 'resp_1',
    action: { kind: 'TerminalAction', command: 'ls' },
  },
  MessageEvent: { source: 'user', llm_message: { role: 'user', content: [{ type: 'text', text: 'hi' }] } },
  AgentErrorEvent: { tool_name: 'terminal', tool_call_id: 'call_1', error: 'bad arguments' },
  ObservationEvent: {
    tool_name: 'terminal',
    tool_call_id: 'call_1',
    observation: { kind: 'TerminalObservation', output: '' },
    action_id: 'a1',
  },
  UserRejectObservation: { tool_name: 'terminal', tool_call_id: 'call_1', action_id: 'a1' },
  SystemPromptEvent: { system_prompt: text('You are an agent'), tools: [{ name: 'terminal' }] },
  StreamingDeltaEvent: { content: 'Hel' },
  TokenEvent: { source: 'agent', prompt_token_ids: [1, 2], response_token_ids: [3] },
  InterruptEvent: {},
  PauseEvent: {},
};

/** A valid event of a kind with a fresh id and the given time. */
export function sample(kind: EventKind, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: randomUUID(), timestamp: new Date().toISOString(), kind, ...MINIMAL[kind], ...extra };
}

/** n MessageEvents with increasing timestamps from `start` (ms apart), so they sort as created. */
export function messages(n: number, start = Date.now(), stepMs = 1): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) =>
    sample('MessageEvent', {
      timestamp: new Date(start + i * stepMs).toISOString(),
      llm_message: { role: 'user', content: [{ type: 'text', text: `m${i}` }] },
    }),
  );
}
