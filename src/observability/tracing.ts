/**
 * OpenTelemetry tracing of starts: the api opens a span per start (its attributes from the request's
 * observability_metadata and observability_tags, a named child span from observability_span_name), and
 * Temporal's OpenTelemetry interceptors carry its context into the start-task workflow and its
 * activities. The exporter is chosen by OTEL_TRACES_EXPORTER: none (the default), console or otlp
 * (to OTEL_EXPORTER_OTLP_ENDPOINT).
 */
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config';
import type { StartRequest } from '../schemas/app-conversations';

export const TRACER_NAME = 'agent-control';

/** Drops spans: the worker's workflow-span sink when no exporter is configured. */
export class NoopSpanExporter implements SpanExporter {
  export(_spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    done({ code: ExportResultCode.SUCCESS });
  }
  async shutdown(): Promise<void> {}
}

export interface Tracing {
  /** The exporter, for the worker's workflow spans (they leave the workflow sandbox through a sink). */
  exporter: SpanExporter | null;
  resource: Resource;
  shutdown(): Promise<void>;
}

/** Registers the process's tracer provider with the configured exporter; with `none`, tracing stays a no-op. */
export function installTracing(config: Config['tracing'], serviceName: string): Tracing {
  const resource = new Resource({ 'service.name': serviceName });
  const exporter: SpanExporter | null =
    config.exporter === 'console'
      ? new ConsoleSpanExporter()
      : config.exporter === 'otlp'
        ? new OTLPTraceExporter(config.otlpEndpoint ? { url: config.otlpEndpoint } : {})
        : null;
  if (!exporter) return { exporter: null, resource, shutdown: async () => undefined };
  const provider = new BasicTracerProvider({ resource });
  provider.addSpanProcessor(new BatchSpanProcessor(exporter));
  registerProvider(provider);
  return { exporter, resource, shutdown: () => provider.shutdown() };
}

/** Registers a provider for this process, with the context manager that carries the active span across awaits. */
export function registerProvider(provider: BasicTracerProvider): void {
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
}

/** The start span's attributes: the request's metadata under `metadata.`, its tags, and what identifies the start. */
export function startAttributes(request: StartRequest, ids: { taskId: string; userId: string }): Attributes {
  const attributes: Attributes = {
    'agent_control.start_task.id': ids.taskId,
    'agent_control.user.id': ids.userId,
  };
  for (const [key, value] of Object.entries(request.observability_metadata ?? {}))
    attributes[`metadata.${key}`] = value;
  if (request.observability_tags?.length) attributes['agent_control.tags'] = request.observability_tags;
  if (request.selected_repository) attributes['agent_control.repository'] = request.selected_repository;
  if (request.trigger) attributes['agent_control.trigger'] = request.trigger;
  return attributes;
}

const failed = (span: Span, e: unknown) => {
  span.recordException(e as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
};

/** Runs `work` in the start's span, and in a named child span when the request names one. */
export function inStartSpan<T>(
  request: StartRequest,
  ids: { taskId: string; userId: string },
  work: () => Promise<T>,
): Promise<T> {
  const tracer = trace.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(
    'app_conversation.start',
    { attributes: startAttributes(request, ids) },
    async (root) => {
      const name = request.observability_span_name;
      try {
        if (!name) return await work();
        return await tracer.startActiveSpan(name, async (child) => {
          try {
            return await work();
          } catch (e) {
            failed(child, e);
            throw e;
          } finally {
            child.end();
          }
        });
      } catch (e) {
        failed(root, e);
        throw e;
      } finally {
        root.end();
      }
    },
  );
}
