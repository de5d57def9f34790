import { toValidationDetail } from '../src/schemas/validation-detail';
import { normalizeEventTime } from '../src/schemas/event-time';
import { EVENT_KINDS, EventBatchSchema, EventSchema } from '../src/schemas/events';
import { MINIMAL, sample } from './helpers/event-samples';

const errors = (input: unknown) => {
  const r = EventBatchSchema.safeParse(input);
  if (r.success) throw new Error('expected a failure');
  return toValidationDetail(r.error.issues, input, 'body');
};

describe('event schemas', () => {
  it('covers the 19 kinds of SPEC 2.1', () => {
    expect(EVENT_KINDS).toHaveLength(19);
    expect(Object.keys(MINIMAL).sort()).toEqual([...EVENT_KINDS].sort());
  });

  it.each(EVENT_KINDS)('%s: minimal event parses, defaults filled', (kind) => {
    const parsed = EventSchema.parse(sample(kind)) as Record<string, unknown>;
    expect(parsed.kind).toBe(kind);
    expect(parsed.parent_id).toBeNull();
    expect(typeof parsed.source).toBe('string');
  });

  it.each(EVENT_KINDS)('%s: an unknown property is extra_forbidden', (kind) => {
    expect(errors([sample(kind, { surprise: 1 })])).toEqual([
      { loc: ['body', 0, 'surprise'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden', input: 1 },
    ]);
  });

  it.each(
    EVENT_KINDS.filter((k) =>
      Object.keys(MINIMAL[k]).some((f) => f !== 'source' && f !== 'key' && f !== 'value' && f !== 'action'),
    ),
  )('%s: each required field is required', (kind) => {
    const required = Object.keys(MINIMAL[kind]).filter((f) => !['key', 'value', 'action', 'content'].includes(f));
    for (const field of required) {
      const ev = sample(kind);
      delete ev[field];
      const d = errors([ev]);
      expect(d).toContainEqual(expect.objectContaining({ loc: ['body', 0, field], type: 'missing' }));
    }
  });

  it("fills each kind's default source; four kinds require one", () => {
    const defaults: Record<string, string> = {
      ACPToolCallEvent: 'agent',
      Condensation: 'environment',
      CondensationRequest: 'environment',
      CondensationSummaryEvent: 'environment',
      ConversationStateUpdateEvent: 'environment',
      HookExecutionEvent: 'hook',
      LLMCompletionLogEvent: 'environment',
      ActionEvent: 'agent',
      AgentErrorEvent: 'agent',
      ObservationEvent: 'environment',
      UserRejectObservation: 'environment',
      SystemPromptEvent: 'agent',
      StreamingDeltaEvent: 'agent',
      InterruptEvent: 'user',
      PauseEvent: 'user',
    };
    for (const [kind, source] of Object.entries(defaults)) {
      expect((EventSchema.parse(sample(kind as never)) as { source: string }).source).toBe(source);
    }
    for (const kind of ['ServerErrorEvent', 'ConversationErrorEvent', 'MessageEvent', 'TokenEvent'] as const) {
      const ev = sample(kind);
      delete ev.source;
      expect(errors([ev])).toContainEqual(expect.objectContaining({ loc: ['body', 0, 'source'], type: 'missing' }));
    }
  });

  it('materialises the spec defaults', () => {
    const acp = EventSchema.parse(sample('ACPToolCallEvent')) as any;
    expect(acp).toMatchObject({
      is_error: false,
      status: null,
      tool_kind: null,
      raw_input: null,
      raw_output: null,
      content: null,
    });
    const hook = EventSchema.parse(sample('HookExecutionEvent')) as any;
    expect(hook).toMatchObject({
      blocked: false,
      stdout: '',
      stderr: '',
      reason: null,
      hook_input: null,
      source: 'hook',
    });
    const reject = EventSchema.parse(sample('UserRejectObservation')) as any;
    expect(reject).toMatchObject({ rejection_reason: 'User rejected the action', rejection_source: 'user' });
    const log = EventSchema.parse(sample('LLMCompletionLogEvent')) as any;
    expect(log).toMatchObject({ model_name: 'unknown', usage_id: 'default' });
    const action = EventSchema.parse(sample('ActionEvent')) as any;
    expect(action).toMatchObject({
      security_risk: 'UNKNOWN',
      thinking_blocks: [],
      critic_result: null,
      summary: null,
      reasoning_content: null,
    });
    expect(action.thought).toEqual([{ text: 'look', type: 'text', cache_prompt: false }]);
    const cond = EventSchema.parse(sample('Condensation')) as any;
    expect(cond).toMatchObject({ forgotten_event_ids: [], summary: null, summary_offset: null });
    const msg = EventSchema.parse(sample('MessageEvent')) as any;
    expect(msg).toMatchObject({ activated_skills: [], extended_content: [], llm_response_id: null, sender: null });
  });

  it('fills id and timestamp when absent', () => {
    const { id, timestamp, ...rest } = sample('PauseEvent');
    expect(id && timestamp).toBeTruthy();
    const parsed = EventSchema.parse(rest) as { id: string; timestamp: string };
    expect(parsed.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(normalizeEventTime(parsed.timestamp)).not.toBeNull();
  });

  it('enums: bad values are reported with the allowed ones', () => {
    expect(errors([sample('HookExecutionEvent', { hook_event_type: 'OnSave' })])[0]).toMatchObject({
      loc: ['body', 0, 'hook_event_type'],
      type: 'enum',
      input: 'OnSave',
    });
    expect(errors([sample('PauseEvent', { source: 'robot' })])[0]).toMatchObject({
      loc: ['body', 0, 'source'],
      type: 'enum',
    });
    expect(errors([sample('ActionEvent', { security_risk: 'EXTREME' })])[0]).toMatchObject({
      loc: ['body', 0, 'security_risk'],
      type: 'enum',
    });
    expect(errors([sample('UserRejectObservation', { rejection_source: 'llm' })])[0]).toMatchObject({ type: 'enum' });
  });

  it('an unknown kind is union_tag_invalid at the event', () => {
    expect(errors([sample('PauseEvent'), { kind: 'NopeEvent' }])[0]).toMatchObject({
      loc: ['body', 1],
      type: 'union_tag_invalid',
    });
  });

  it('ActionEvent.action has a kind among the 37 action kinds', () => {
    expect(
      EventSchema.safeParse(sample('ActionEvent', { action: { kind: 'FinishAction', message: 'done' } })).success,
    ).toBe(true);
    expect(EventSchema.safeParse(sample('ActionEvent', { action: null })).success).toBe(true);
    expect(errors([sample('ActionEvent', { action: { kind: 'HackAction' } })])[0]).toMatchObject({
      loc: ['body', 0, 'action', 'kind'],
      type: 'enum',
    });
  });

  it('TextContent is closed; thinking blocks of both types', () => {
    expect(errors([sample('ActionEvent', { thought: [{ text: 'x', bold: true }] })])[0]).toMatchObject({
      loc: ['body', 0, 'thought', 0, 'bold'],
      type: 'extra_forbidden',
    });
    const ok = EventSchema.parse(
      sample('ActionEvent', {
        thinking_blocks: [
          { type: 'thinking', thinking: 'hmm' },
          { type: 'redacted_thinking', data: 'xx' },
        ],
      }),
    ) as any;
    expect(ok.thinking_blocks).toEqual([
      { type: 'thinking', thinking: 'hmm', signature: null },
      { type: 'redacted_thinking', data: 'xx' },
    ]);
  });

  it('Condensation: forgotten_event_ids unique, summary_offset >= 0', () => {
    expect(errors([sample('Condensation', { forgotten_event_ids: ['a', 'a'] })])[0]).toMatchObject({
      loc: ['body', 0, 'forgotten_event_ids'],
      type: 'value_error',
    });
    expect(errors([sample('Condensation', { summary_offset: -1 })])[0]).toMatchObject({
      type: 'greater_than_equal',
      ctx: { ge: 0 },
    });
  });

  it('keeps arbitrary JSON payloads: keys with dots and $, arrays of arrays', () => {
    const odd = { $ref: '#/x', 'a.b': [[1, 2], [3]] };
    const parsed = EventSchema.parse(sample('ObservationEvent', { observation: odd })) as any;
    expect(parsed.observation).toEqual(odd);
  });

  it('timestamps: ISO 8601 with or without zone; garbage refused', () => {
    expect(errors([sample('PauseEvent', { timestamp: 'yesterday' })])[0]).toMatchObject({
      loc: ['body', 0, 'timestamp'],
      type: 'datetime_from_date_parsing',
    });
    expect(EventSchema.safeParse(sample('PauseEvent', { timestamp: '2024-05-01T12:00:00.123456' })).success).toBe(true);
  });
});

describe('event time keys', () => {
  it.each([
    ['2024-05-01T12:00:00Z', '2024-05-01T12:00:00.000000Z'],
    ['2024-05-01T12:00:00.123456789Z', '2024-05-01T12:00:00.123456Z'],
    ['2024-05-01T12:00:00.5', '2024-05-01T12:00:00.500000Z'],
    ['2024-05-01T14:30:00+02:30', '2024-05-01T12:00:00.000000Z'],
    ['2024-05-01T00:00:00-0100', '2024-05-01T01:00:00.000000Z'],
    ['2024-05-01', '2024-05-01T00:00:00.000000Z'],
    ['2024-05-01 12:00', '2024-05-01T12:00:00.000000Z'],
  ])('%s -> %s', (input, key) => {
    expect(normalizeEventTime(input)).toBe(key);
  });

  it.each(['', 'now', '2024-02-30T00:00:00Z', '2024-13-01', '2024-05-01T25:00:00Z', '2024-05-01T12:00:00+24:00'])(
    'refuses %p',
    (input) => {
      expect(normalizeEventTime(input)).toBeNull();
    },
  );

  it('orders as strings in time order', () => {
    const keys = ['2024-05-01T12:00:00.000002Z', '2024-05-01T12:00:00.000010Z', '2024-05-01T11:59:59.999999+00:00'].map(
      (k) => normalizeEventTime(k)!,
    );
    expect([...keys].sort()).toEqual([keys[2], keys[0], keys[1]]);
  });
});
