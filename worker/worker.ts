/**
 * Builds the Temporal worker of one host: the prebuilt workflow bundle plus the activities over their
 * dependencies on the shared task queue, and the same activities on its host's queue (hostTaskQueue),
 * where the calls on the process sandboxes this host holds arrive.
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
import { createActivities } from '../activities';
import { createProviders } from '../activities/sandbox-providers';
import { SecretBox } from '../src/auth/secret-box';
import { ActivityOutcomesInterceptor } from './activity-outcomes';
import type { Config } from '../src/config';
import {
  createConversationServices,
  createOrganizationQuotas,
  createSandboxService,
  createServices,
  createStores,
} from '../src/composition';
import { hostTaskQueue } from '../src/temporal/shared';
import { sweepLeftoversWhileRunning } from '../activities/sandbox-leftovers';
import { workerHost } from './worker-host';

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
    /** Starts the sweeps; answers their stop. */
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
  const workflowBundle: WorkflowBundleOption = { codePath: deps.workflowBundlePath };
  const box = new SecretBox(deps.secretsKey);
  const stores = createStores(deps.db, { box });
  const { sandboxes, conversations, startTasks, appConversations } = stores;
  const settings = createServices(stores, { box }).startSettings;
  // Without the api's operation timeout: the default (60 s), as before.
  const sandboxService = createSandboxService(stores, {
    box,
    temporal: deps.client,
    taskQueue: deps.taskQueue,
    sandboxes: deps.config.sandboxes,
    quotas: deps.config,
  });
  const { pendingMessages, conversationService } = createConversationServices(stores, {
    box,
    temporal: deps.client,
    sandboxService,
    sandboxWaitMs: deps.config.starts.sandboxWaitMs,
  });
  const activities = createActivities({
    db: deps.db,
    identity,
    taskQueue: deps.taskQueue,
    sandbox: {
      sandboxes,
      box,
      providers,
      startTimeoutMs: deps.config.sandboxes.startTimeoutMs,
      controlPlaneUrl: deps.config.sandboxes.controlPlaneUrl,
      conversations,
      hostQueue,
    },
    startTask: {
      startTasks,
      appConversations,
      conversations,
      sandboxes,
      sandboxService,
      settings,
      box,
      gitCloneBaseUrl: deps.config.starts.gitCloneBaseUrl,
      hostQueue,
    },
    callbacks: {
      appConversations,
      conversations,
      events: stores.events,
      callbacks: stores.callbacks,
      startTasks,
      settings,
      box,
      gitHostAApiUrl: deps.config.starts.gitHostAApiUrl,
      hosts: deps.config.callbackHosts,
      agents: conversationService,
    },
    pendingMessages: { pendingMessages },
    admission: {
      temporal: deps.client,
      taskQueue: deps.taskQueue,
      sandboxes,
      startTasks,
      organizationQuotas: createOrganizationQuotas(stores, deps.config),
    },
  });
  const common = {
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
  const shared = await Worker.create({
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
  const host = await Worker.create({ ...common, taskQueue: hostQueue });
  const log = Runtime.instance().logger;
  return new HostWorker(shared, host, hostQueue, () =>
    sweepLeftoversWhileRunning({ sandboxes, providers, hostQueue, log }),
  );
}
