/**
 * Unit tests of the app-conversation start request (SPEC 2.3): null as "not given", as the clients of the
 * published document send it, in the parse and in the OpenAPI document.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { StartRequestSchema, echoRequest } from '../src/schemas/app-conversations';
import { detail } from './helpers/start-request-samples';

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
