/** Pure logic of the agent: what the LLM sees of the events, and what a condensation forgets. */
import { planCondensation } from '../src/runtime/agent/condenser';
import { fitEvent } from '../src/runtime/agent/event-size';
import { buildView, toMessages } from '../src/runtime/agent/llm-view';
import { EventSchema, type Event } from '../src/schemas/events';

let n = 0;
const ev = (e: Record<string, unknown>): Event =>
  EventSchema.parse({ id: `e${++n}`, timestamp: '2026-01-01T00:00:00Z', parent_id: null, ...e });
const text = (t: string) => [{ type: 'text', text: t }];
const system = () =>
  ev({ kind: 'SystemPromptEvent', system_prompt: { text: 'sys' }, tools: [], dynamic_context: { text: 'dyn' } });
const user = (t: string) =>
  ev({ kind: 'MessageEvent', source: 'user', llm_message: { role: 'user', content: text(t) } });
const action = (call: string, response: string) =>
  ev({
    kind: 'ActionEvent',
    thought: [],
    action: { kind: 'ThinkAction' },
    tool_name: 'think',
    tool_call_id: call,
    tool_call: { id: call, name: 'think', arguments: '{}' },
    llm_response_id: response,
  });
const observation = (call: string, out: string) =>
  ev({
    kind: 'ObservationEvent',
    tool_name: 'think',
    tool_call_id: call,
    action_id: 'x',
    observation: { kind: 'ThinkObservation', content: text(out) },
  });

describe('LLM view', () => {
  it('groups parallel calls of one response in one assistant message, each answered by a tool message', () => {
    const events = [
      system(),
      user('go'),
      action('c1', 'r1'),
      action('c2', 'r1'),
      observation('c1', 'one'),
      observation('c2', 'two'),
      action('c3', 'r2'),
    ];
    const messages = toMessages(buildView(events));
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(messages[0]).toEqual({ role: 'system', content: 'sys\n\ndyn' });
    expect((messages[2] as { tool_calls: unknown[] }).tool_calls).toHaveLength(2);
    expect(messages[4]).toEqual({ role: 'tool', tool_call_id: 'c2', content: 'two' });
  });

  it('puts a user message sent while calls were open after their answers', () => {
    const events = [system(), user('go'), action('c1', 'r1'), user('meanwhile'), observation('c1', 'done')];
    const messages = toMessages(buildView(events));
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(messages[4]).toEqual({ role: 'user', content: 'meanwhile' });
  });

  it('leaves out forgotten events and inserts the summary where the condensation put it', () => {
    const events = [
      system(),
      user('go'),
      action('c1', 'r1'),
      observation('c1', 'x'),
      action('c2', 'r2'),
      observation('c2', 'y'),
    ];
    const condensation = ev({
      kind: 'Condensation',
      forgotten_event_ids: [events[2]!.id, events[3]!.id],
      summary: 'it thought',
      summary_offset: 2,
      llm_response_id: 'r3',
    });
    const view = buildView([...events, condensation]);
    expect(view.map((v) => v.kind)).toEqual([
      'SystemPromptEvent',
      'MessageEvent',
      'summary',
      'ActionEvent',
      'ObservationEvent',
    ]);
    expect(toMessages(view)[2]).toEqual({ role: 'user', content: expect.stringContaining('it thought') });
  });
});

describe('condensation plan', () => {
  const history = () => [
    system(),
    user('go'),
    ...[1, 2, 3, 4].flatMap((i) => [action(`c${i}`, `r${i}`), observation(`c${i}`, `o${i}`)]),
  ];

  it('forgets nothing while the view fits max_size, or without a condenser unless forced', () => {
    const view = buildView(history());
    expect(planCondensation(view, { max_size: 10, keep_first: 2 })).toBeNull();
    expect(planCondensation(view, null)).toBeNull();
  });

  const ids = (items: unknown[]) => items.map((v) => (v as Event).id);

  it('past max_size forgets the middle and keeps the head and the newest max_size/2 items', () => {
    const view = buildView(history());
    const plan = planCondensation(view, { max_size: 5, keep_first: 2 })!;
    expect(plan.forgotten).toEqual(ids(view.slice(2, 8)));
    expect(plan.summaryOffset).toBe(2);
    expect(plan.material).toContain('Observation of think: o3');
  });

  it('never starts the kept tail at an answer: a forced condensation keeps the head and the newest half, moved to the next action', () => {
    const view = buildView(history());
    const plan = planCondensation(view, null, true)!;
    // Half of 10 would keep from item 5 (an observation); the tail starts at the next action instead.
    expect(plan.forgotten).toEqual(ids(view.slice(2, 6)));
    const kept = view.filter((v) => !plan.forgotten.includes((v as Event).id));
    expect(kept.map((v) => v.kind)).toEqual([
      'SystemPromptEvent',
      'MessageEvent',
      'ActionEvent',
      'ObservationEvent',
      'ActionEvent',
      'ObservationEvent',
    ]);
  });

  it('never keeps an action in the head while forgetting its answer', () => {
    const view = buildView(history());
    // keep_first 3 would end the head at the first action; the head grows to take its answer too.
    const plan = planCondensation(view, { max_size: 5, keep_first: 3 })!;
    expect(plan.summaryOffset).toBe(4);
    expect(plan.forgotten).toEqual(ids(view.slice(4, 8)));
  });
});

describe('event size', () => {
  it('leaves an event that fits as it is', () => {
    const e = { kind: 'ObservationEvent', observation: { content: [{ text: 'small' }] } };
    expect(fitEvent(e, 1000)).toBe(e);
  });

  it('cuts the longest strings of an oversized event until it fits, saying so', () => {
    const e = {
      kind: 'ObservationEvent',
      observation: { content: [{ text: '\u0000'.repeat(300_000) }], old_content: 'a'.repeat(200_000), command: 'x' },
    };
    const fitted = fitEvent(e, 100_000);
    expect(Buffer.byteLength(JSON.stringify(fitted))).toBeLessThanOrEqual(100_000);
    expect(fitted.observation.content[0]!.text).toMatch(/characters left out: the event was too large\]$/);
    expect(fitted.observation.command).toBe('x');
    expect(e.observation.old_content).toHaveLength(200_000); // the original is untouched
  });
});
