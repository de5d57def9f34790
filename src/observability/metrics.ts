/**
 * The api's Prometheus metrics (prom-client: the exposition format, histograms and the process's own
 * metrics, maintained upstream rather than written here). One registry per api server, so several in a
 * process (the tests) keep their counts apart. Served on a listener of its own (METRICS_ADDRESS): never
 * behind a user's API key, never on the api's port.
 */
import http from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { listenOn } from '../process/net';

export interface ApiMetricsSources {
  /** Websocket subscribers of this process now. */
  subscribers(): number;
}

/** Buckets of the live paths' lags: a millisecond to ten seconds. */
const LAG_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class ApiMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'agent_control_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern (unmatched for no route) and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly requestSeconds = new Histogram({
    name: 'agent_control_http_request_duration_seconds',
    help: 'Time to answer an HTTP request (until its response is handed to Node), by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly ingestBatches = new Counter({
    name: 'agent_control_ingest_batches_total',
    help: 'Event batches reported by runtimes and stored whole',
    registers: [this.registry],
  });
  readonly ingestEvents = new Counter({
    name: 'agent_control_ingest_events_total',
    help: 'Events stored from runtimes (a repeated event counts once)',
    registers: [this.registry],
  });
  readonly ingestDropped = new Counter({
    name: 'agent_control_ingest_dropped_total',
    help: 'What runtimes reported beyond the event schemas and was dropped: events of unknown kinds (what="event") and unknown fields of known kinds (what="field")',
    labelNames: ['what'] as const,
    registers: [this.registry],
  });
  readonly websocketDeliveryLagSeconds = new Histogram({
    name: 'agent_control_websocket_delivery_lag_seconds',
    help: 'Time from a stored event being stored to its send to a websocket subscriber, for events that went out live (not read back from the log)',
    buckets: LAG_BUCKETS_SECONDS,
    registers: [this.registry],
  });
  readonly liveChannelLagSeconds = new Histogram({
    name: 'agent_control_live_channel_lag_seconds',
    help: 'Time from a batch published to the live channel by another api process to its read by this one (the clocks of both processes)',
    buckets: LAG_BUCKETS_SECONDS,
    registers: [this.registry],
  });
  readonly startStreams = new Gauge({
    name: 'agent_control_start_streams_open',
    help: 'stream-start answers still streaming',
    registers: [this.registry],
  });

  readonly startStreamReads = new Counter({
    name: 'agent_control_start_stream_reads_total',
    help: "Reads by stream-start for a start's next status, by source: update (the workflow answered), record (MongoDB: each stream's first read, then while no worker accepts the Update, once the workflow is closed, or with START_STREAM_FOLLOW=record)",
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  constructor(sources: ApiMetricsSources) {
    new Gauge({
      name: 'agent_control_websocket_subscribers',
      help: 'Websocket subscribers to conversation events in this process',
      registers: [this.registry],
      collect() {
        this.set(sources.subscribers());
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'agent_control_api_' });
  }

  /** A listener that answers GET /metrics and 404 to everything else; resolves once it listens. */
  async serve(address: string, onError: (e: Error) => void): Promise<{ url: string; close(): Promise<void> }> {
    const server = http.createServer((req, res) => {
      if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        (e: unknown) =>
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${(e as Error).message}\n`),
      );
    });
    server.on('clientError', (_e, socket) => socket.destroy());
    const at = address.lastIndexOf(':');
    const host = address.slice(0, at).replace(/^\[|\]$/g, '');
    await listenOn(server, Number(address.slice(at + 1)), host, onError).catch((e: Error) => {
      throw new Error(`METRICS_ADDRESS=${address}: ${e.message}`, { cause: e });
    });
    const bound = server.address() as { address: string; port: number };
    return {
      url: `http://${bound.address.includes(':') ? `[${bound.address}]` : bound.address}:${bound.port}/metrics`,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }
}
