/**
 * Unit tests of the start request's callback processors (SPEC 2.4): discriminated by kind, their defaults,
 * what a post would need, no credential echoed, and the published processors under their neutral names.
 */
import {
  CALLBACK_PROCESSOR_KINDS,
  CallbackProcessorSchema,
  StartRequestSchema,
} from '../src/schemas/app-conversations';
import { publishedDocument } from './helpers/published-schemas';
import { detail } from './helpers/start-request-samples';

/** The published OpenHands Cloud API 0.0.1 document (the reference where SPEC.md is silent). */
const PUBLISHED_DOCUMENT = publishedDocument() as { components: { schemas: Record<string, unknown> } };

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
