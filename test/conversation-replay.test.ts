/** Pure logic of the agent: a conversation's state rebuilt from its stored events after a runtime restart. */
import { replay, restartReport, unanswered } from '../src/runtime/agent/conversation-replay';
import { EventSchema, type Event } from '../src/schemas/events';

let n = 0;
const at = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, '0')}.000Z`;
const ev = (e: Record<string, unknown>): Event => {
  n++;
  return EventSchema.parse({ id: `e${n}`, timestamp: at(n % 60), parent_id: null, ...e });
};
const text = (t: string) => [{ type: 'text', text: t }];
const status = (value: string) => ev({ kind: 'ConversationStateUpdateEvent', key: 'execution_status', value });
const user = (t: string, skills: string[] = []) =>
  ev({
    kind: 'MessageEvent',
    source: 'user',
    llm_message: { role: 'user', content: text(t) },
    activated_skills: skills,
  });
const action = (call: string, tool = 'terminal') =>
  ev({
    kind: 'ActionEvent',
    thought: [],
    action: { kind: 'TerminalAction', command: 'make' },
    tool_name: tool,
    tool_call_id: call,
    tool_call: { id: call, name: tool, arguments: '{}' },
    llm_response_id: 'r1',
  });
const observation = (
  call: string,
  observation: Record<string, unknown> = { kind: 'TerminalObservation', content: text('ok') },
) => ev({ kind: 'ObservationEvent', tool_name: 'terminal', tool_call_id: call, action_id: 'a', observation });
const createdAt = '2025-12-31T23:59:59.000Z';

describe('replay', () => {
  it('gives a fresh state for an empty log', () => {
    expect(replay([], createdAt)).toEqual({
      status: 'idle',
      tasks: [],
      activatedSkills: new Set(),
      condenseRequested: false,
      updatedAt: createdAt,
      open: [],
    });
  });

  it('keeps the action of a log that waits for a confirmation as pending', () => {
    const log = [
      status('idle'),
      user('deploy it'),
      status('running'),
      action('c1'),
      status('waiting_for_confirmation'),
    ];
    const state = replay(log, createdAt);
    expect(state.status).toBe('waiting_for_confirmation');
    expect(state.open.map((a) => a.tool_call_id)).toEqual(['c1']);
    expect(state.open[0]).toBe(log[3]);
    expect(state.updatedAt).toBe(log[4]!.timestamp);
  });

  it('counts observations, rejections and errors as answers', () => {
    const log = [
      action('c1'),
      action('c2'),
      action('c3'),
      action('c4'),
      observation('c1'),
      ev({ kind: 'UserRejectObservation', tool_name: 'terminal', tool_call_id: 'c2', action_id: 'x' }),
      ev({ kind: 'AgentErrorEvent', tool_name: 'terminal', tool_call_id: 'c3', error: 'bad' }),
    ];
    expect(unanswered(log).map((a) => a.tool_call_id)).toEqual(['c4']);
    expect(replay(log, createdAt).open.map((a) => a.tool_call_id)).toEqual(['c4']);
  });

  it('takes the last status, the last task list, every activated skill and the last condensation request', () => {
    const tasks = [{ title: 'write tests', notes: '', status: 'in_progress' }];
    const log = [
      status('running'),
      user('use the deploy skill', ['deploy']),
      action('c1', 'task_tracker'),
      observation('c1', {
        kind: 'TaskTrackerObservation',
        content: text('1.'),
        task_list: [{ title: 'old', notes: '', status: 'todo' }],
      }),
      action('c2', 'task_tracker'),
      observation('c2', { kind: 'TaskTrackerObservation', content: text('1.'), task_list: tasks }),
      user('and the release skill', ['release']),
      ev({ kind: 'CondensationRequest' }),
      status('finished'),
    ];
    const state = replay(log, createdAt);
    expect(state).toMatchObject({ status: 'finished', tasks, condenseRequested: true, open: [] });
    expect([...state.activatedSkills]).toEqual(['deploy', 'release']);
    const condensed = replay(
      [...log, ev({ kind: 'Condensation', forgotten_event_ids: [], llm_response_id: 'r9' })],
      createdAt,
    );
    expect(condensed.condenseRequested).toBe(false);
  });

  it('reads an empty task list from a task observation without one', () => {
    const log = [
      observation('c1', {
        kind: 'TaskTrackerObservation',
        content: text('1.'),
        task_list: [{ title: 'x', notes: '', status: 'todo' }],
      }),
      observation('c2', { kind: 'TaskTrackerObservation', content: text('none') }),
    ];
    expect(replay(log, createdAt).tasks).toEqual([]);
  });
});

describe('restartReport', () => {
  it('reports a run the restart cut short and answers every action in flight', () => {
    const log = [status('running'), action('c1'), action('c2'), observation('c1')];
    const state = replay(log, createdAt);
    expect(state.status).toBe('running');
    const report = restartReport(state.open).map((e) => EventSchema.parse({ id: 'x', timestamp: at(0), ...e }));
    expect(report.map((e) => e.kind)).toEqual(['ServerErrorEvent', 'AgentErrorEvent']);
    expect(report[0]).toMatchObject({
      source: 'environment',
      code: 'RuntimeRestarted',
      detail: expect.stringContaining('(1 action(s) in flight)'),
    });
    expect(report[1]).toMatchObject({
      source: 'agent',
      tool_name: 'terminal',
      tool_call_id: 'c2',
      error: expect.stringContaining('may have run partly or not at all'),
    });
    expect(unanswered([...log, ...report])).toEqual([]);
  });

  it('says nothing of actions when none was in flight', () => {
    const report = restartReport([]);
    expect(report).toHaveLength(1);
    expect(report[0]!.detail).toBe(
      'The runtime stopped while the conversation ran; it is paused now: run it to go on.',
    );
  });
});
