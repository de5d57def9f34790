/**
 * Builds the Temporal worker of one host: the prebuilt workflow bundle plus the activities over their
 * dependencies (worker-activities.ts) on the shared task queue, and the same activities on its host's
 * queue (hostTaskQueue), where the calls on the process sandboxes this host holds arrive.
 */
import type { Client } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, type WorkerOptions, type WorkflowBundleOption } from '@temporalio/worker';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import { Resource } from '@opentelemetry/resources';
import { NoopSpanExporter, type Tracing } from '../src/observability/tracing';
import type { Db } from 'mongodb';
import os from 'node:os';
import { createProviders } from '../activities/sandbox-providers';
import { ActivityOutcomesInterceptor } from './activity-outcomes';
import type { Config } from '../src/config';
import { hostTaskQueue } from '../src/temporal/shared';
import { sweepLeftoversWhileRunning } from '../activities/sandbox-leftovers';
import { reportCapabilitiesWhileRunning } from './worker-capabilities';
import { workerHost } from './worker-host';
import { wireActivities } from './worker-activities';

export interface WorkerDeps {
  connection: NativeConnection;
  /** A client of the same namespace: starts create and resume sandboxes through their workflows. */
  client: Client;
  namespace: string;
  taskQueue: string;
  db: Db;
  /** Path to the bundle written by `npm run build` (scripts/bundle-workflows.ts). */
  workflowBundlePath: string;
  /** Where sandboxes live and how providers reach their backends; `temporal.workerHost`: this host (workerHost). */
  config: Pick<Config, 'dataDir' | 'sandboxes' | 'starts' | 'callbackHosts' | 'quotas' | 'organizationQuotas'> & {
    temporal: Pick<Config['temporal'], 'workerHost'>;
  };
  secretsKey: string;
  /** Where workflow and activity spans go (installTracing); without it spans are dropped. */
  tracing?: Pick<Tracing, 'exporter' | 'resource'>;
  identity?: string;
  shutdownGraceMs?: number;
}

/** The SDK's warning that a worker polls no workflow tasks: the host queue's poller does not, on purpose. */
export const isHostPollerNotice = (message: string) =>
  message.startsWith('No workflows registered, not polling for workflow tasks');

/**
 * The two pollers of a host's worker, run, drained and stopped together; while they run, the sweep of
 * what deleted sandboxes left on this host (activities/sandbox-leftovers.ts).
 */
export class HostWorker {
  constructor(
    /** Workflows and every activity, on the shared task queue. */
    readonly shared: Worker,
    /** The activities, on this host's task queue. */
    readonly host: Worker,
    /** This host's task queue. */
    readonly hostQueue: string,
    /** Starts the sweeps and the reports of what this host can run; answers their stop. */
    private readonly sweeps: () => () => Promise<void>,
  ) {}

  /** Until both have stopped; when one fails, the other is shut down too and the failure is thrown. */
  async run(): Promise<void> {
    const stopSweeps = this.sweeps();
    try {
      const ran = await Promise.allSettled(
        [this.shared, this.host].map((w) =>
          w.run().catch((e: unknown) => {
            this.shutdown();
            throw e;
          }),
        ),
      );
      const failed = ran.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    } finally {
      await stopSweeps();
    }
  }

  /** Runs until `work` settles, then drains; answers what it answered (a worker that fails first fails it). */
  async runUntil<T>(work: Promise<T>): Promise<T> {
    const running = this.run();
    const stoppedFirst = running.then(() => {
      throw new Error('the worker stopped before the work it ran for ended');
    });
    try {
      return await Promise.race([work, stoppedFirst]);
    } finally {
      this.shutdown();
      await running.catch(() => undefined);
      stoppedFirst.catch(() => undefined);
    }
  }

  /** Starts draining both (one not running is left as it is). */
  shutdown(): void {
    for (const w of [this.shared, this.host]) if (w.getState() === 'RUNNING') w.shutdown();
  }

  getState(): ReturnType<Worker['getState']> {
    return this.shared.getState();
  }
}

export async function createWorker(deps: WorkerDeps): Promise<HostWorker> {
  const identity = deps.identity ?? `${process.pid}@${os.hostname()}`;
  const hostQueue = hostTaskQueue(deps.taskQueue, workerHost(deps.config.temporal.workerHost, deps.config.dataDir));
  const providers = createProviders(deps.config);
  const { activities, stores } = wireActivities(deps, { identity, hostQueue, providers });
  const common = pollerOptions(deps, identity, activities);
  const shared = await createSharedPoller(deps, common);
  const host = await Worker.create({ ...common, taskQueue: hostQueue });
  const log = Runtime.instance().logger;
  return new HostWorker(shared, host, hostQueue, () => {
    const stops = [
      sweepLeftoversWhileRunning({ sandboxes: stores.sandboxes, providers, hostQueue, log }),
      reportCapabilitiesWhileRunning({ workerHosts: stores.workerHosts, providers, hostQueue, log }),
    ];
    return async () => {
      await Promise.all(stops.map((stop) => stop()));
    };
  });
}

/** What both pollers share: the connection, who they are, the activities and their interceptors, the drain. */
function pollerOptions(
  deps: WorkerDeps,
  identity: string,
  activities: ReturnType<typeof wireActivities>['activities'],
) {
  return {
    connection: deps.connection,
    namespace: deps.namespace,
    identity,
    activities,
    interceptors: {
      activity: [
        (ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx) }),
        (ctx) => ({ inbound: new ActivityOutcomesInterceptor(ctx) }),
      ],
    },
    shutdownGraceTime: deps.shutdownGraceMs ?? 10_000,
  } satisfies Partial<WorkerOptions>;
}

/** The poller of the shared task queue: the prebuilt workflow bundle and every activity. */
function createSharedPoller(deps: WorkerDeps, common: ReturnType<typeof pollerOptions>): Promise<Worker> {
  const workflowBundle: WorkflowBundleOption = { codePath: deps.workflowBundlePath };
  return Worker.create({
    ...common,
    taskQueue: deps.taskQueue,
    workflowBundle,
    // The workflow interceptors' spans leave the sandbox through this sink (to nowhere without an exporter).
    sinks: {
      exporter: makeWorkflowExporter(
        deps.tracing?.exporter ?? new NoopSpanExporter(),
        deps.tracing?.resource ?? new Resource({}),
      ),
    },
  });
}
