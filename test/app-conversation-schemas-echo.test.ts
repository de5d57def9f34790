/**
 * Unit tests of what the app-conversation routes answer (SPEC 2.3, 3.1): the start request's echo, the start
 * task and page views, and their OpenAPI rendering.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import {
  AppConversationPageSchema,
  AppConversationSearchQuerySchema,
  EchoedStartRequestSchema,
  StartRequestSchema,
  StartTaskSchema,
  echoRequest,
} from '../src/schemas/app-conversations';
import { detail, FULL, UUID } from './helpers/start-request-samples';

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
