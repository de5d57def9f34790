/** Builds the Temporal worker: the prebuilt workflow bundle plus the activities over their dependencies. */
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/worker';
import { Resource } from '@opentelemetry/resources';
import { NoopSpanExporter, type Tracing } from '../src/observability/tracing';
import type { Db } from 'mongodb';
import os from 'node:os';
import { createActivities } from '../activities';
import { createProviders } from '../activities/sandbox-providers';
import { SecretBox } from '../src/auth/secret-box';
import { ActivityOutcomesInterceptor } from './activity-outcomes';
import type { Config } from '../src/config';
import { createConversationServices, createSandboxService, createServices, createStores } from '../src/composition';

export interface WorkerDeps {
  connection: NativeConnection;
  /** A client of the same namespace: starts create and resume sandboxes through their workflows. */
  client: Client;
  namespace: string;
  taskQueue: string;
  db: Db;
  /** Path to the bundle written by `npm run build` (scripts/bundle-workflows.ts). */
  workflowBundlePath: string;
  /** Where sandboxes live and how providers reach their backends. */
  config: Pick<Config, 'dataDir' | 'sandboxes' | 'starts' | 'quotas'>;
  secretsKey: string;
  /** Where workflow and activity spans go (installTracing); without it spans are dropped. */
  tracing?: Pick<Tracing, 'exporter' | 'resource'>;
  identity?: string;
  shutdownGraceMs?: number;
}

export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  const identity = deps.identity ?? `${process.pid}@${os.hostname()}`;
  const workflowBundle: WorkflowBundleOption = { codePath: deps.workflowBundlePath };
  const box = new SecretBox(deps.secretsKey);
  const stores = createStores(deps.db, { box });
  const { sandboxes, conversations, startTasks, appConversations } = stores;
  const settings = createServices(stores, { box }).startSettings;
  // Without the api's operation timeout: the default (60 s), as before.
  const sandboxService = createSandboxService(stores, { box, temporal: deps.client, taskQueue: deps.taskQueue, sandboxes: deps.config.sandboxes, maxRunning: deps.config.quotas.runningSandboxes });
  const { pendingMessages } = createConversationServices(stores, { box, temporal: deps.client, sandboxService, sandboxWaitMs: deps.config.starts.sandboxWaitMs });
  const activities = createActivities({
    db: deps.db,
    identity,
    taskQueue: deps.taskQueue,
    sandbox: {
      sandboxes,
      box,
      providers: createProviders(deps.config),
      startTimeoutMs: deps.config.sandboxes.startTimeoutMs,
      controlPlaneUrl: deps.config.sandboxes.controlPlaneUrl,
      conversations,
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
    },
    pendingMessages: { pendingMessages },
    admission: { temporal: deps.client, taskQueue: deps.taskQueue, sandboxes, startTasks },
  });
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    identity,
    workflowBundle,
    activities,
    interceptors: { activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx) }), (ctx) => ({ inbound: new ActivityOutcomesInterceptor(ctx) })] },
    // The workflow interceptors' spans leave the sandbox through this sink (to nowhere without an exporter).
    sinks: { exporter: makeWorkflowExporter(deps.tracing?.exporter ?? new NoopSpanExporter(), deps.tracing?.resource ?? new Resource({})) },
    shutdownGraceTime: deps.shutdownGraceMs ?? 10_000,
  });
}
