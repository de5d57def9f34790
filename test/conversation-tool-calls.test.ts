/** Pure logic of the agent: the LLM's tool calls read into actions or errors, and tool results into observations. */
import type { ActionEvent } from '../src/runtime/agent/conversation-events';
import {
  actionArgs,
  observationOf,
  parseToolCall,
  runnable,
  toolCallEvents,
  toolFailure,
} from '../src/runtime/agent/conversation-tool-calls';
import type { Completion, ToolCall } from '../src/runtime/agent/llm-protocol';
import { toolByName } from '../src/runtime/agent/tools';
import { EventSchema, type Event } from '../src/schemas/events';

const call = (id: string, name: string, args: string): ToolCall => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});
const completion = (calls: ToolCall[], content: string | null = null): Completion => ({
  id: 'resp-1',
  content,
  reasoning_content: content ? 'because' : null,
  tool_calls: calls,
  prompt_token_ids: null,
  response_token_ids: null,
  request: {},
  response: {},
});
let n = 0;
/** Records a partial the way the conversation does (id, timestamp, parent, defaults). */
const record = (partial: Record<string, unknown>): Event =>
  EventSchema.parse({ id: `e${++n}`, timestamp: '2026-01-01T00:00:00Z', parent_id: null, ...partial });

describe('parseToolCall', () => {
  it('reads valid arguments into the action, with the tool schema defaults filled', () => {
    expect(parseToolCall(call('c1', 'terminal', '{"command":"ls -la"}'))).toEqual({
      action: { kind: 'TerminalAction', command: 'ls -la', timeout: 120 },
      error: null,
    });
  });

  it('names the tools there are when the tool is unknown', () => {
    const r = parseToolCall(call('c1', 'browser', '{}'));
    expect(r.action).toBeNull();
    expect(r.error).toBe(
      'Unknown tool "browser". Available tools: terminal, file_editor, think, task_tracker, finish.',
    );
  });

  it('reports arguments that are not JSON (cut off, single quotes) without throwing', () => {
    const cut = parseToolCall(call('c1', 'terminal', '{"command": "ls'));
    expect(cut.action).toBeNull();
    expect(cut.error).toMatch(/^The arguments of terminal are not valid JSON: /);
    expect(parseToolCall(call('c2', 'think', "{'thought': 'x'}")).error).toMatch(
      /^The arguments of think are not valid JSON: /,
    );
  });

  it('lists every schema issue with its path, and "(arguments)" when the arguments are not an object', () => {
    const r = parseToolCall(call('c1', 'terminal', '{"command":"","timeout":-1,"shell":"zsh"}'));
    expect(r.action).toBeNull();
    expect(r.error).toMatch(/^Invalid arguments for terminal: /);
    expect(r.error).toContain('command: ');
    expect(r.error).toContain('timeout: ');
    expect(r.error).toContain('(arguments): '); // the unknown key "shell" of a strict object
    expect(parseToolCall(call('c2', 'think', '[1, 2]')).error).toMatch(/^Invalid arguments for think: \(arguments\): /);
    expect(parseToolCall(call('c3', 'think', 'null')).error).toMatch(/^Invalid arguments for think: \(arguments\): /);
  });

  it('reads empty arguments as an empty object, checked against the schema', () => {
    expect(parseToolCall(call('c1', 'think', '')).error).toMatch(/^Invalid arguments for think: thought: /);
    expect(parseToolCall(call('c2', 'task_tracker', '')).error).toMatch(
      /^Invalid arguments for task_tracker: command: /,
    );
  });
});

describe('toolCallEvents', () => {
  it('records every call first, in order, then an error per bad call; only the good ones can run', () => {
    const c = completion(
      [
        call('c1', 'think', '{"thought":"plan"}'),
        call('c2', 'terminal', '{oops'),
        call('c3', 'nope', '{}'),
        call('c4', 'finish', '{"message":"done"}'),
      ],
      'Let me look.',
    );
    const { actions, errors } = toolCallEvents(c);
    expect(actions.map((a) => a.tool_call_id)).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect(errors.map((e) => [e.kind, e.tool_call_id, e.tool_name])).toEqual([
      ['AgentErrorEvent', 'c2', 'terminal'],
      ['AgentErrorEvent', 'c3', 'nope'],
    ]);
    const recorded = actions.map((a) => record(a) as ActionEvent);
    expect(recorded[0]).toMatchObject({
      thought: [{ type: 'text', text: 'Let me look.', cache_prompt: false }],
      reasoning_content: 'because',
      action: { kind: 'ThinkAction', thought: 'plan' },
      llm_response_id: 'resp-1',
    });
    // The answer's text goes with its first call only.
    expect(recorded.slice(1).map((a) => [a.thought, a.reasoning_content])).toEqual([
      [[], null],
      [[], null],
      [[], null],
    ]);
    expect(recorded[1]).toMatchObject({
      action: null,
      tool_call: { id: 'c2', name: 'terminal', arguments: '{oops', origin: 'completion' },
    });
    expect(runnable(recorded).map((a) => a.tool_call_id)).toEqual(['c1', 'c4']);
    errors.forEach((e) => expect(() => record(e)).not.toThrow());
  });

  it('gives no thought when the answer has no text', () => {
    const { actions, errors } = toolCallEvents(completion([call('c1', 'think', '{"thought":"x"}')]));
    expect(errors).toEqual([]);
    expect(record(actions[0]!)).toMatchObject({ thought: [], reasoning_content: null });
  });
});

describe('observations', () => {
  it('hands the tool its arguments without the recorded kind', () => {
    const a = record(
      toolCallEvents(completion([call('c1', 'terminal', '{"command":"pwd","timeout":5}')])).actions[0]!,
    ) as ActionEvent;
    expect(actionArgs(a)).toEqual({ command: 'pwd', timeout: 5 });
  });

  it('builds the observation from the result, its extra fields last', () => {
    const tool = toolByName('task_tracker')!;
    const obs = observationOf(tool, { text: '1. [ ] x', isError: false, fields: { command: 'view', task_list: [] } });
    expect(obs).toEqual({
      kind: 'TaskTrackerObservation',
      content: [{ type: 'text', text: '1. [ ] x', cache_prompt: false }],
      is_error: false,
      command: 'view',
      task_list: [],
    });
  });

  it('turns a tool that throws into an error observation that does not finish the run', () => {
    const result = toolFailure('file_editor', new Error('EACCES: permission denied'));
    expect(result).toEqual({
      text: 'The file_editor tool failed: EACCES: permission denied',
      isError: true,
      fields: undefined,
      finish: false,
    });
    expect(observationOf(toolByName('file_editor')!, result)).toEqual({
      kind: 'FileEditorObservation',
      content: [{ type: 'text', text: result.text, cache_prompt: false }],
      is_error: true,
    });
  });
});
