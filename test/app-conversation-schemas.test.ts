/**
 * Unit tests of the app-conversation schemas (SPEC 2.3, 2.4): the enums, and the closed start request with
 * its field checks, its initial_message (the published SendMessageRequest) and its observability_metadata.
 * The other topics: app-conversation-schemas-{nulls,processors,echo,queries}.test.ts.
 */
import {
  AGENT_TYPES,
  CALLBACK_PROCESSOR_KINDS,
  EchoedStartRequestSchema,
  GIT_PROVIDERS,
  ObservabilityMetadataSchema,
  START_TASK_STATUSES,
  SUGGESTED_TASK_TYPES,
  StartRequestSchema,
  TRIGGERS,
  echoRequest,
} from '../src/schemas/app-conversations';
import { detail, FULL, UUID } from './helpers/start-request-samples';

describe('app-conversation enums', () => {
  it('keep the spec order', () => {
    expect(GIT_PROVIDERS).toEqual([
      'git_host_a',
      'git_host_b',
      'git_host_c',
      'git_host_d',
      'git_host_e',
      'git_host_f',
      'enterprise_sso',
    ]);
    expect(TRIGGERS).toEqual([
      'resolver',
      'gui',
      'suggested_task',
      'platform_api',
      'chat',
      'microagent_management',
      'issue_tracker_a',
      'issue_tracker_b',
      'issue_tracker_c',
      'git_host_a',
      'automation',
    ]);
    expect(AGENT_TYPES).toEqual(['default', 'plan']);
    expect(SUGGESTED_TASK_TYPES).toContain('MERGE_CONFLICTS');
    expect(START_TASK_STATUSES).toEqual([
      'WORKING',
      'WAITING_FOR_SANDBOX',
      'PREPARING_REPOSITORY',
      'RUNNING_SETUP_SCRIPT',
      'SETTING_UP_GIT_HOOKS',
      'SETTING_UP_SKILLS',
      'STARTING_CONVERSATION',
      'READY',
      'ERROR',
    ]);
    expect(CALLBACK_PROCESSOR_KINDS).toEqual([
      'GitHostAV1CallbackProcessor',
      'GitHostBV1CallbackProcessor',
      'GitHostCV1CallbackProcessor',
      'IssueTrackerAV1CallbackProcessor',
      'IssueTrackerBV1CallbackProcessor',
      'ChatV1CallbackProcessor',
      'LoggingCallbackProcessor',
      'SetTitleCallbackProcessor',
    ]);
  });
});

describe('start request', () => {
  it('parses a full request, filling defaults and normalising UUIDs', () => {
    const req = StartRequestSchema.parse(FULL);
    expect(req.conversation_id).toBe(UUID);
    // run: false unless asked, as the published SendMessageRequest says.
    expect(req.initial_message).toEqual({
      role: 'user',
      content: [{ text: 'Fix the failing test', type: 'text', cache_prompt: false }],
      run: false,
    });
    expect(req.processors[0]).toEqual({
      kind: 'GitHostAV1CallbackProcessor',
      git_host_a_view_data: {},
      should_request_summary: true,
      inline_pr_comment: false,
    });
    expect(req.plugins).toEqual([{ source: 'github:org/plugin', ref: 'v1', parameters: {} }]);
  });

  it('an empty request is valid; list defaults are filled', () => {
    expect(StartRequestSchema.parse({})).toEqual({ processors: [], pr_number: [], agent_type: 'default', secrets: {} });
  });

  it('is closed, down to its nested objects', () => {
    expect(detail(StartRequestSchema, { ...FULL, surprise: 1 })).toEqual([
      { loc: ['body', 'surprise'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden', input: 1 },
    ]);
    for (const bad of [
      { initial_message: { content: [{ text: 'x' }], extra: true } },
      { suggested_task: { extra: true } },
      { plugins: [{ source: 's', extra: true }] },
      {
        processors: [
          { kind: 'ChatV1CallbackProcessor', chat_view_data: { channel_id: 'C1', thread_ts: '1.2' }, extra: true },
        ],
      },
      { processors: [{ kind: 'LoggingCallbackProcessor', level: 'info', extra: true }] },
    ]) {
      expect(detail(StartRequestSchema, bad).map((d) => d.type)).toEqual(['extra_forbidden']);
    }
  });

  it('refuses a conversation_id that is not a UUID, as uuid_parsing', () => {
    const [d] = detail(StartRequestSchema, { conversation_id: 'not-a-uuid' });
    expect(d).toMatchObject({ loc: ['body', 'conversation_id'], type: 'uuid_parsing', input: 'not-a-uuid' });
    expect(detail(StartRequestSchema, { parent_conversation_id: '1234' })[0]!.type).toBe('uuid_parsing');
  });

  it('checks field values', () => {
    const types = (input: unknown) => detail(StartRequestSchema, input).map((d) => [d.loc.join('.'), d.type]);
    // No content is no message (the published SendMessageRequest's content is optional); too much is refused.
    expect(StartRequestSchema.parse({ initial_message: { content: [] } }).initial_message).toEqual({
      role: 'user',
      content: [],
      run: false,
    });
    expect(types({ initial_message: { content: Array.from({ length: 101 }, () => ({ text: 'x' })) } })).toEqual([
      ['body.initial_message.content', 'too_long'],
    ]);
    expect(types({ initial_message: { role: 'robot', content: [{ text: 'x' }] } })).toEqual([
      ['body.initial_message.role', 'enum'],
    ]);
    expect(types({ initial_message: { content: [{ image_urls: [] }] } })).toEqual([
      ['body.initial_message.content.0.image_urls', 'too_short'],
    ]);
    expect(types({ git_provider: 'gitlab' })).toEqual([['body.git_provider', 'enum']]);
    expect(types({ trigger: 'cron' })).toEqual([['body.trigger', 'enum']]);
    expect(types({ agent_type: 'fast' })).toEqual([['body.agent_type', 'enum']]);
    expect(types({ suggested_task: { issue_number: -1 } })).toEqual([
      ['body.suggested_task.issue_number', 'greater_than_equal'],
    ]);
    expect(types({ pr_number: [1.5] })).toEqual([['body.pr_number.0', 'int_from_float']]);
    expect(types({ selected_repository: '' })).toEqual([['body.selected_repository', 'string_too_short']]);
    expect(types({ observability_tags: [''] })).toEqual([['body.observability_tags.0', 'string_too_short']]);
    expect(types({ observability_span_name: 'span{id=42}' })).toEqual([
      ['body.observability_span_name', 'string_pattern_mismatch'],
    ]);
    expect(types({ observability_span_name: 'x'.repeat(101) })).toEqual([
      ['body.observability_span_name', 'string_too_long'],
    ]);
    expect(types({ plugins: [{ ref: 'v1' }] })).toEqual([['body.plugins.0.source', 'missing']]);
    expect(types({ secrets: { 'BAD-NAME': 'v' } })).toEqual([['body.secrets.BAD-NAME', 'string_pattern_mismatch']]);
    expect(types({ secrets: { '1ST': 'v' } })).toEqual([['body.secrets.1ST', 'string_pattern_mismatch']]);
    expect(types({ secrets: { TOKEN: 1 } })).toEqual([['body.secrets.TOKEN', 'string_type']]);
  });
});

describe('initial_message: the published SendMessageRequest', () => {
  it('takes every role and image content; run is false unless sent', () => {
    for (const role of ['user', 'system', 'assistant', 'tool'] as const) {
      expect(
        StartRequestSchema.parse({ initial_message: { role, content: [{ text: 'x' }] } }).initial_message,
      ).toMatchObject({ role, run: false });
    }
    const withImage = StartRequestSchema.parse({
      initial_message: {
        content: [{ text: 'What is this?' }, { image_urls: ['data:image/png;base64,AAAA'] }],
        run: true,
      },
    });
    expect(withImage.initial_message).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?', cache_prompt: false },
        { type: 'image', image_urls: ['data:image/png;base64,AAAA'], cache_prompt: false },
      ],
      run: true,
    });
  });

  it('the start task echoes it as parsed', () => {
    const req = StartRequestSchema.parse({
      initial_message: { role: 'system', content: [{ image_urls: ['https://example.com/a.png'] }] },
    });
    const echo = echoRequest(req);
    expect(echo.initial_message).toEqual({
      role: 'system',
      content: [{ type: 'image', image_urls: ['https://example.com/a.png'], cache_prompt: false }],
      run: false,
    });
    expect(EchoedStartRequestSchema.parse(echo)).toEqual(echo);
  });
});
describe('observability_metadata', () => {
  it('accepts scalars and homogeneous lists of scalars', () => {
    const ok = { s: 'x', n: 1.5, b: false, ss: ['a'], ns: [1, 2], bs: [true], empty: [] };
    expect(ObservabilityMetadataSchema.parse(ok)).toEqual(ok);
  });

  it.each([
    ['a mixed list', ['a', 1], 'one type'],
    ['an object', { a: 1 }, 'not object'],
    ['a nested list', [[1]], 'only strings, numbers or booleans'],
    ['a list holding null', [null], 'only strings, numbers or booleans'],
    ['null', null, 'not null'],
  ])('refuses %s with a clear message', (_name, value, words) => {
    const [d, ...more] = detail(StartRequestSchema, { observability_metadata: { key: value } });
    expect(more).toEqual([]);
    expect(d).toMatchObject({ loc: ['body', 'observability_metadata', 'key'], type: 'value_error', input: value });
    expect(d!.msg).toContain(words);
  });
});
