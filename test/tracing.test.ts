/**
 * OpenTelemetry tracing of a start with an in-memory exporter: the api's start span carries the request's
 * observability metadata and tags, its named child span is there, and the trace goes on into the
 * start-task workflow and its activities (Temporal's interceptors), in the same trace.
 */
import { trace } from '@opentelemetry/api';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { registerProvider } from '../src/observability/tracing';
import type { TestApi } from './helpers/api';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

describe('tracing of starts', () => {
  const exporter = new InMemorySpanExporter();
  const resource = new Resource({ 'service.name': 'agent-control-test' });
  let service: ServiceUnderTest;
  let t: TestApi;

  beforeAll(async () => {
    const provider = new BasicTracerProvider({ resource });
    provider.addSpanProcessor(new SimpleSpanProcessor(exporter));
    registerProvider(provider);
    service = await startServiceUnderTest(
      'tracing-',
      { SANDBOX_IDLE_TIMEOUT_MS: '0' },
      { tracing: { exporter, resource } },
    );
    t = service.t;
  });

  afterAll(async () => {
    await service?.close();
    trace.disable();
  });

  it('the start span has the metadata and tags, a named child span, and the workflow and activities continue its trace', async () => {
    const user = await t.newUser();
    await t.setOrgLlm(user.key, { model: 'm', base_url: 'http://127.0.0.1:9/v1' });
    const started = await t.request('POST', '/api/v1/app-conversations/stream-start', {
      key: user.key,
      body: {
        observability_metadata: { team: 'platform', priority: 2, urgent: true, labels: ['a', 'b'] },
        observability_tags: ['nightly', 'ci'],
        observability_span_name: 'nightly-fix',
      },
    });
    expect(started.body.at(-1).status).toBe('READY');
    const taskId = started.body[0].id;

    const spans = exporter.getFinishedSpans();
    const root = spans.find(
      (s) => s.name === 'app_conversation.start' && s.attributes['agent_control.start_task.id'] === taskId,
    )!;
    expect(root).toBeDefined();
    expect(root.attributes).toMatchObject({
      'metadata.team': 'platform',
      'metadata.priority': 2,
      'metadata.urgent': true,
      'metadata.labels': ['a', 'b'],
      'agent_control.tags': ['nightly', 'ci'],
      'agent_control.user.id': user.userId,
    });
    const traceId = root.spanContext().traceId;
    const child = spans.find((s) => s.name === 'nightly-fix');
    expect(child?.parentSpanId).toBe(root.spanContext().spanId);
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId).map((s) => s.name);
    expect(inTrace).toEqual(expect.arrayContaining(['StartWorkflow:startTaskWorkflow', 'RunActivity:acquireSandbox']));
  }, 60_000);
});
