/** Unit tests of the app-conversation schemas (SPEC 2.3, 2.4, 3.1): enums, the closed start request, its echo, queries. */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import type { z } from 'zod';
import { encodeCursor } from '../src/schemas/page-cursor';
import { toValidationDetail } from '../src/schemas/validation-detail';
import {
  AGENT_TYPES,
  APP_CONVERSATIONS_LISTING,
  AppConversationPageSchema,
  AppConversationSearchQuerySchema,
  CALLBACK_PROCESSOR_KINDS,
  CallbackProcessorSchema,
  EchoedStartRequestSchema,
  GIT_PROVIDERS,
  IdsQuerySchema,
  ObservabilityMetadataSchema,
  START_TASK_STATUSES,
  SUGGESTED_TASK_TYPES,
  StartRequestSchema,
  StartTaskCountQuerySchema,
  StartTaskSchema,
  StartTaskSearchQuerySchema,
  TRIGGERS,
  echoRequest,
} from '../src/schemas/app-conversations';
import { publishedDocument } from './helpers/published-schemas';

const UUID = '7f3e2a10-4b5c-4d6e-8f90-a1b2c3d4e5f6';

/** The published OpenHands Cloud API 0.0.1 document (the reference where SPEC.md is silent). */
const PUBLISHED_DOCUMENT = publishedDocument() as { components: { schemas: Record<string, unknown> } };

const detail = (schema: z.ZodType, input: unknown, part: 'body' | 'query' = 'body') => {
  const r = schema.safeParse(input);
  if (r.success) throw new Error('expected a failure');
  return toValidationDetail(r.error.issues, input, part);
};

const FULL = {
  sandbox_id: 'sb-1',
  conversation_id: UUID.toUpperCase(),
  initial_message: { content: [{ text: 'Fix the failing test' }] },
  system_message_suffix: 'Be brief.',
  processors: [{ kind: 'GitHostAV1CallbackProcessor' }, { kind: 'SetTitleCallbackProcessor' }],
  llm_model: 'model-x',
  agent_profile_id: 'profile-1',
  selected_repository: 'owner/repo',
  selected_branch: 'main',
  git_provider: 'git_host_b',
  suggested_task: { task_type: 'MERGE_CONFLICTS', repo: 'owner/repo', issue_number: 12, title: 'Resolve conflicts' },
  title: 'A title',
  trigger: 'gui',
  pr_number: [12],
  parent_conversation_id: UUID,
  agent_type: 'plan',
  public: false,
  observability_metadata: { team: 'core', attempt: 2, urgent: true, labels: ['a', 'b'] },
  observability_tags: ['nightly'],
  observability_span_name: 'start/api v1',
  plugins: [{ source: 'github:org/plugin', ref: 'v1' }],
  secrets: { GITHUB_TOKEN: 'ghp_secret', _other: 'x' },
};

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

describe('null as "not given" (what clients of the published document send)', () => {
  /** Every field of the published AppConversationStartRequest-Input, null. */
  const ALL_NULL = Object.fromEntries(
    [
      'sandbox_id',
      'conversation_id',
      'initial_message',
      'system_message_suffix',
      'processors',
      'llm_model',
      'agent_profile_id',
      'selected_repository',
      'selected_branch',
      'git_provider',
      'suggested_task',
      'title',
      'trigger',
      'pr_number',
      'parent_conversation_id',
      'agent_type',
      'public',
      'observability_metadata',
      'observability_tags',
      'observability_span_name',
      'plugins',
      'secrets',
    ].map((k) => [k, null]),
  );

  it('every optional field of the start request takes null as absent: the defaults apply, nothing null is kept', () => {
    const req = StartRequestSchema.parse(ALL_NULL);
    expect(req).toEqual({ processors: [], pr_number: [], agent_type: 'default', secrets: {} });
    expect(Object.keys(req).sort()).toEqual(['agent_type', 'pr_number', 'processors', 'secrets']);
    expect(echoRequest(req)).toEqual(echoRequest(StartRequestSchema.parse({})));
  });

  it("so do the nested objects: suggested_task fields, a plugin's ref, repo_path and parameters", () => {
    const req = StartRequestSchema.parse({
      suggested_task: { git_provider: null, task_type: null, repo: 'o/r', issue_number: null, title: null },
      plugins: [{ source: 'github:org/plugin', ref: null, repo_path: null, parameters: null }],
    });
    expect(req.suggested_task).toEqual({ repo: 'o/r' });
    expect(req.plugins).toEqual([{ source: 'github:org/plugin', parameters: {} }]);
    expect(echoRequest(req).suggested_task).toEqual({ repo: 'o/r', git_provider: null, task_type: null });
  });

  it('stays closed: unknown fields, also null ones, are refused; a required field may not be null', () => {
    expect(detail(StartRequestSchema, { ...ALL_NULL, surprise: null }).map((d) => [d.loc.join('.'), d.type])).toEqual([
      ['body.surprise', 'extra_forbidden'],
    ]);
    expect(detail(StartRequestSchema, { plugins: [{ source: 'x', extra: null }] }).map((d) => d.type)).toEqual([
      'extra_forbidden',
    ]);
    expect(detail(StartRequestSchema, { suggested_task: { extra: 1 } }).map((d) => d.type)).toEqual([
      'extra_forbidden',
    ]);
    expect(detail(StartRequestSchema, { plugins: [{ source: null }] })[0]).toMatchObject({
      loc: ['body', 'plugins', 0, 'source'],
    });
    expect(detail(StartRequestSchema, { initial_message: { content: null } })[0]).toMatchObject({
      loc: ['body', 'initial_message', 'content'],
    });
    // null is "not given", never a value of another type.
    expect(detail(StartRequestSchema, { title: 5 })[0]).toMatchObject({ loc: ['body', 'title'] });
  });

  it('the OpenAPI document shows each optional field as anyOf[its schema, null], as the published one does', () => {
    const registry = new OpenAPIRegistry();
    registry.registerPath({
      method: 'post',
      path: '/start',
      request: { body: { content: { 'application/json': { schema: StartRequestSchema } } } },
      responses: { 200: { description: 'ok' } },
    });
    const schemas = new OpenApiGeneratorV31(registry.definitions).generateDocument({
      openapi: '3.1.0',
      info: { title: 't', version: '0' },
    }).components!.schemas! as Record<string, any>;
    const start = schemas.AppConversationStartRequest;
    expect(start.additionalProperties).toBe(false);
    expect(start.required ?? []).toEqual([]);
    for (const name of Object.keys(ALL_NULL)) {
      expect([name, start.properties[name].anyOf?.at(-1)]).toEqual([name, { type: 'null' }]);
    }
    expect(start.properties.initial_message.anyOf[0]).toEqual({ $ref: '#/components/schemas/SendMessageRequest' });
    expect(start.properties.suggested_task.anyOf[0]).toEqual({ $ref: '#/components/schemas/SuggestedTask' });
    expect(start.properties.processors.default).toEqual([]);
    expect(start.properties.agent_type.default).toBe('default');
    for (const name of ['ref', 'repo_path', 'parameters'])
      expect(schemas.PluginSpec.properties[name].anyOf.at(-1)).toEqual({ type: 'null' });
    expect(schemas.PluginSpec.required).toEqual(['source']);
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

describe('callback processors', () => {
  /** The fields each kind cannot do without (the issue trackers': where to post). */
  const REQUIRED: Record<string, object> = {
    IssueTrackerAV1CallbackProcessor: {
      svc_acc_email: 'bot@acme.example',
      issue_key: 'WID-1',
      issue_tracker_a_cloud_id: 'cloud-1',
    },
    IssueTrackerBV1CallbackProcessor: {
      issue_key: 'OPS-2',
      workspace_name: 'acme',
      base_api_url: 'https://jira.acme.example',
    },
    ChatV1CallbackProcessor: { chat_view_data: { channel_id: 'C0123', thread_ts: '1700000000.000100' } },
  };

  it('are discriminated by kind; an unknown or missing kind is refused', () => {
    for (const kind of CALLBACK_PROCESSOR_KINDS)
      expect(CallbackProcessorSchema.parse({ kind, ...REQUIRED[kind] }).kind).toBe(kind);
    expect(detail(StartRequestSchema, { processors: [{ kind: 'WebhookProcessor' }] })).toEqual([
      expect.objectContaining({ loc: ['body', 'processors', 0], type: 'union_tag_invalid' }),
    ]);
    expect(detail(StartRequestSchema, { processors: [{}] })[0]).toMatchObject({
      loc: ['body', 'processors', 0],
      type: 'union_tag_not_found',
    });
  });

  it('each kind has its defaults; Logging takes a level; SetTitle nothing but kind', () => {
    expect(
      CallbackProcessorSchema.parse({ kind: 'GitHostAV1CallbackProcessor', should_request_summary: false }),
    ).toEqual({
      kind: 'GitHostAV1CallbackProcessor',
      git_host_a_view_data: {},
      should_request_summary: false,
      inline_pr_comment: false,
    });
    expect(CallbackProcessorSchema.parse({ kind: 'GitHostBV1CallbackProcessor' })).toEqual({
      kind: 'GitHostBV1CallbackProcessor',
      git_host_b_view_data: {},
      should_request_summary: true,
      inline_mr_comment: false,
    });
    expect(CallbackProcessorSchema.parse({ kind: 'GitHostCV1CallbackProcessor' })).toEqual({
      kind: 'GitHostCV1CallbackProcessor',
      git_host_c_view_data: {},
      should_request_summary: true,
    });
    expect(
      CallbackProcessorSchema.parse({ kind: 'ChatV1CallbackProcessor', ...REQUIRED.ChatV1CallbackProcessor }),
    ).toEqual({ kind: 'ChatV1CallbackProcessor', ...REQUIRED.ChatV1CallbackProcessor });
  });

  it('a credential in a processor is echoed in no 422, whatever else is wrong with the request', () => {
    const key = 'atat-in-clear';
    const full = {
      kind: 'IssueTrackerAV1CallbackProcessor',
      svc_acc_email: 'a@acme.example',
      issue_key: 'A-1',
      issue_tracker_a_cloud_id: 'c',
      decrypted_api_key: key,
    };
    for (const body of [
      { processors: [{ kind: 'IssueTrackerAV1CallbackProcessor', decrypted_api_key: key }] }, // fields missing: their parent is echoed
      { processors: [{ ...full, kind: 'NoSuchCallbackProcessor' }] }, // no union member
      { processors: Array.from({ length: 21 }, () => full) }, // the whole list is echoed
    ]) {
      const details = detail(StartRequestSchema, body);
      expect(details.length).toBeGreaterThan(0);
      expect(JSON.stringify(details)).not.toContain(key);
    }
  });

  it('refuses at the start what a post would need and lacks, naming the field', () => {
    const refused = (processor: object) => detail(StartRequestSchema, { processors: [processor] });
    expect(refused({ kind: 'ChatV1CallbackProcessor', chat_view_data: { channel_id: 'C1' } })).toEqual([
      expect.objectContaining({
        loc: ['body', 'processors', 0, 'chat_view_data', 'thread_ts'],
        msg: expect.stringMatching(/thread_ts is needed/),
      }),
    ]);
    expect(
      refused({
        kind: 'GitHostAV1CallbackProcessor',
        inline_pr_comment: true,
        git_host_a_view_data: { repo: 'acme/w', pr_number: 1 },
      })[0],
    ).toMatchObject({
      loc: ['body', 'processors', 0, 'git_host_a_view_data', 'comment_id'],
    });
    expect(
      refused({ kind: 'GitHostAV1CallbackProcessor', git_host_a_view_data: { repo: 'acme/..', pr_number: 1 } })[0],
    ).toMatchObject({ loc: ['body', 'processors', 0, 'git_host_a_view_data', 'repo'] });
    expect(
      refused({ kind: 'GitHostBV1CallbackProcessor', git_host_b_view_data: { project_id: { $ne: 1 } } })[0],
    ).toMatchObject({ loc: ['body', 'processors', 0, 'git_host_b_view_data', 'project_id'] });
    expect(refused({ kind: 'GitHostBV1CallbackProcessor', inline_mr_comment: true })[0]).toMatchObject({
      loc: ['body', 'processors', 0, 'git_host_b_view_data', 'discussion_id'],
    });
    expect(refused({ kind: 'GitHostCV1CallbackProcessor', git_host_c_view_data: { pr_id: -1 } })[0]).toMatchObject({
      loc: ['body', 'processors', 0, 'git_host_c_view_data', 'pr_id'],
    });
    expect(
      detail(StartRequestSchema, {
        processors: Array.from({ length: 21 }, () => ({ kind: 'LoggingCallbackProcessor' })),
      })[0],
    ).toMatchObject({ loc: ['body', 'processors'], type: 'too_long' });
    expect(CallbackProcessorSchema.parse({ kind: 'LoggingCallbackProcessor' })).toEqual({
      kind: 'LoggingCallbackProcessor',
      level: 'info',
    });
    expect(CallbackProcessorSchema.safeParse({ kind: 'LoggingCallbackProcessor', level: 'trace' }).success).toBe(false);
    expect(CallbackProcessorSchema.safeParse({ kind: 'SetTitleCallbackProcessor', level: 'info' }).success).toBe(false);
  });

  // The published processors (OpenHands Cloud API 0.0.1), their product words replaced by SPEC.md's.
  const PUBLISHED: [published: string, ours: string, renames: Record<string, string>][] = [
    ['GithubV1CallbackProcessor-Input', 'GitHostAV1CallbackProcessor', { github_view_data: 'git_host_a_view_data' }],
    ['GitlabV1CallbackProcessor-Input', 'GitHostBV1CallbackProcessor', { gitlab_view_data: 'git_host_b_view_data' }],
    [
      'BitbucketV1CallbackProcessor-Input',
      'GitHostCV1CallbackProcessor',
      { bitbucket_view_data: 'git_host_c_view_data' },
    ],
    [
      'JiraV1CallbackProcessor-Input',
      'IssueTrackerAV1CallbackProcessor',
      { jira_cloud_id: 'issue_tracker_a_cloud_id' },
    ],
    ['JiraDcV1CallbackProcessor-Input', 'IssueTrackerBV1CallbackProcessor', {}],
    ['SlackV1CallbackProcessor-Input', 'ChatV1CallbackProcessor', { slack_view_data: 'chat_view_data' }],
  ];
  const VIEW_DATA: Record<string, object> = {
    git_host_a_view_data: { repo: 'acme/widgets', pr_number: 7, comment_id: 9 }, // inline_pr_comment is sent true
    git_host_b_view_data: { project_id: 'acme/widgets', mr_iid: 7, discussion_id: 'abc1' },
    git_host_c_view_data: { repo: 'acme/widgets', pr_id: 7 },
    chat_view_data: { channel_id: 'C0123', thread_ts: '1700000000.000100' },
  };
  const SAMPLES: Record<string, unknown> = {
    svc_acc_email: 'bot@acme.example',
    issue_key: 'WID-7',
    jira_cloud_id: 'cloud-1',
    workspace_name: 'acme',
    base_api_url: 'https://jira.acme.example',
    decrypted_api_key: 'atat-in-clear',
  };

  it.each(PUBLISHED)(
    '%s: every published field is taken under its neutral name, but a credential in clear',
    (published, ours, renames) => {
      const schema = (
        PUBLISHED_DOCUMENT.components.schemas as Record<
          string,
          { properties: Record<string, { type?: string; default?: unknown }> }
        >
      )[published]!;
      const body: Record<string, unknown> = { kind: ours };
      for (const [field, spec] of Object.entries(schema.properties)) {
        if (field === 'kind' || field === 'decrypted_api_key') continue;
        const name = renames[field] ?? field;
        body[name] =
          field in SAMPLES
            ? SAMPLES[field]
            : spec.type === 'boolean'
              ? !spec.default
              : spec.type === 'object'
                ? VIEW_DATA[name]
                : 'x';
      }
      expect(Object.keys(CallbackProcessorSchema.parse(body)).sort()).toEqual(Object.keys(body).sort());
      if ('decrypted_api_key' in schema.properties) {
        const [d, ...more] = detail(StartRequestSchema, {
          processors: [{ ...body, decrypted_api_key: SAMPLES.decrypted_api_key }],
        });
        expect(more).toEqual([]);
        expect(d).toMatchObject({
          loc: ['body', 'processors', 0, 'decrypted_api_key'],
          type: 'value_error',
          msg: expect.stringMatching(/ISSUE_TRACKER_A_API_KEY/),
        });
        expect(d).not.toHaveProperty('input');
      }
    },
  );
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

describe('echoRequest', () => {
  it('fills git_provider, trigger and the suggested task fields; masks secrets', () => {
    const echo = echoRequest(
      StartRequestSchema.parse({ suggested_task: { repo: 'o/r' }, secrets: { TOKEN: 'hunter2' } }),
    );
    expect(echo.git_provider).toBeNull();
    expect(echo.trigger).toBe('platform_api');
    expect(echo.suggested_task).toEqual({ repo: 'o/r', git_provider: null, task_type: null });
    expect(echo.secrets).toEqual({ TOKEN: '**********' });
    expect(JSON.stringify(echo)).not.toContain('hunter2');
    expect(EchoedStartRequestSchema.parse(echo)).toEqual(echo);
  });

  it('keeps what was given and leaves an absent suggested_task absent', () => {
    const echo = echoRequest(StartRequestSchema.parse(FULL));
    expect(echo).toMatchObject({
      git_provider: 'git_host_b',
      trigger: 'gui',
      conversation_id: UUID,
      selected_repository: 'owner/repo',
    });
    expect(echo.suggested_task).toMatchObject({ git_provider: null, task_type: 'MERGE_CONFLICTS' });
    expect(echo.secrets).toEqual({ GITHUB_TOKEN: '**********', _other: '**********' });
    expect(JSON.stringify(echo)).not.toContain('ghp_secret');
    expect('suggested_task' in echoRequest(StartRequestSchema.parse({}))).toBe(false);
  });

  it('the echoed fields are required in the echo schema', () => {
    const echo = echoRequest(StartRequestSchema.parse({}));
    const { git_provider: _g, ...withoutProvider } = echo;
    expect(detail(EchoedStartRequestSchema, withoutProvider)[0]).toMatchObject({
      loc: ['body', 'git_provider'],
      type: 'missing',
    });
  });
});

describe('views', () => {
  it('a start task carries its echoed request; READY fields are nullable', () => {
    const task = {
      id: 'task-1',
      created_by_user_id: 'user-1',
      status: 'WORKING',
      detail: null,
      request: echoRequest(StartRequestSchema.parse({})),
      app_conversation_id: null,
      sandbox_id: null,
      agent_server_url: null,
      created_at: '2024-05-01T12:00:00.000Z',
      updated_at: '2024-05-01T12:00:00.000Z',
    };
    expect(StartTaskSchema.parse(task)).toEqual(task);
    expect(StartTaskSchema.safeParse({ ...task, status: 'DONE' }).success).toBe(false);
    expect(AppConversationPageSchema.parse({ items: [], next_page_id: null })).toEqual({
      items: [],
      next_page_id: null,
    });
  });

  it('render in an OpenAPI document', () => {
    const registry = new OpenAPIRegistry();
    registry.registerPath({
      method: 'post',
      path: '/stream-start',
      request: {
        query: AppConversationSearchQuerySchema,
        body: { content: { 'application/json': { schema: StartRequestSchema } } },
      },
      responses: {
        200: { description: 'tasks', content: { 'application/json': { schema: StartTaskSchema } } },
        201: { description: 'page', content: { 'application/json': { schema: AppConversationPageSchema } } },
      },
    });
    const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
      openapi: '3.1.0',
      info: { title: 't', version: '0' },
    });
    const schemas = doc.components!.schemas!;
    expect(Object.keys(schemas)).toEqual(
      expect.arrayContaining([
        'AppConversationStartRequest',
        'AppConversationStartRequestEcho',
        'GitHostAV1CallbackProcessor',
        'AppConversation',
      ]),
    );
    expect(JSON.stringify(schemas.AppConversationStartRequest)).toContain('"observability_metadata"');
    expect(schemas.AppConversationStartRequestEcho).toMatchObject({
      required: expect.arrayContaining(['processors', 'pr_number', 'agent_type', 'git_provider', 'trigger', 'secrets']),
    });
  });
});

describe('query parameters', () => {
  it('coerce limit, default the sort order, refuse limit 0 and 101', () => {
    expect(StartTaskSearchQuerySchema.parse({ limit: '5' })).toEqual({ limit: 5, sort_order: 'CREATED_AT_DESC' });
    expect(AppConversationSearchQuerySchema.parse({ sort_order: 'UPDATED_AT' })).toEqual({
      limit: 100,
      sort_order: 'UPDATED_AT',
    });
    for (const schema of [StartTaskSearchQuerySchema, AppConversationSearchQuerySchema]) {
      expect(detail(schema, { limit: '0' }, 'query')[0]).toMatchObject({
        loc: ['query', 'limit'],
        type: 'greater_than',
      });
      expect(detail(schema, { limit: '101' }, 'query')[0]).toMatchObject({
        loc: ['query', 'limit'],
        type: 'less_than_equal',
      });
    }
    for (const sort_order of ['CREATED_AT', 'CREATED_AT_DESC', 'UPDATED_AT', 'UPDATED_AT_DESC']) {
      expect(StartTaskSearchQuerySchema.parse({ sort_order })).toEqual({ limit: 100, sort_order });
    }
    expect(detail(StartTaskSearchQuerySchema, { sort_order: 'TITLE' }, 'query')[0]!.type).toBe('enum');
  });

  it('normalise filters and refuse a page_id from elsewhere', () => {
    expect(
      StartTaskCountQuerySchema.parse({
        conversation_id__eq: UUID.replace(/-/g, ''),
        created_at__gte: '2024-05-01T12:00:00Z',
      }),
    ).toEqual({
      conversation_id__eq: UUID,
      created_at__gte: '2024-05-01T12:00:00.000000Z',
    });
    expect(detail(StartTaskCountQuerySchema, { conversation_id__eq: 'x' }, 'query')[0]!.type).toBe('uuid_parsing');
    expect(detail(AppConversationSearchQuerySchema, { page_id: 'bm9wZQ' }, 'query')[0]).toMatchObject({
      loc: ['query', 'page_id'],
      type: 'value_error',
    });
    const cursor = encodeCursor(APP_CONVERSATIONS_LISTING, [1714564800000, 'c1']);
    expect(AppConversationSearchQuerySchema.parse({ page_id: cursor }).page_id).toEqual([1714564800000, 'c1']);
    expect(StartTaskSearchQuerySchema.safeParse({ page_id: cursor }).success).toBe(false);
  });

  it('ids: 1..100 repeated values', () => {
    expect(IdsQuerySchema.parse({ id: ['a', 'b'] })).toEqual({ id: ['a', 'b'] });
    expect(detail(IdsQuerySchema, { id: [] }, 'query')[0]!.type).toBe('too_short');
    expect(detail(IdsQuerySchema, { id: Array.from({ length: 101 }, (_, i) => `c${i}`) }, 'query')[0]!.type).toBe(
      'too_long',
    );
  });

  it('refuses credentials inside a repository or plugin URL (they belong in secrets)', () => {
    const bad = StartRequestSchema.safeParse({
      selected_repository: 'https://user:pat123@git.example.com/a/b.git',
      plugins: [{ source: 'https://x-access-token:t@example.com/p.git' }],
    });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => i.path.join('.'))).toEqual(['selected_repository', 'plugins.0.source']);
    expect(StartRequestSchema.safeParse({ selected_repository: 'https://git.example.com/a/b.git' }).success).toBe(true);
    expect(StartRequestSchema.safeParse({ selected_repository: 'git@git.example.com:a/b.git' }).success).toBe(true);
    expect(StartRequestSchema.safeParse({ selected_repository: 'acme/widgets' }).success).toBe(true);
  });
});
