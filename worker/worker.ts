/** Builds the Temporal worker: the prebuilt workflow bundle plus the activities over their dependencies. */
import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import type { Db } from 'mongodb';
import os from 'node:os';
import { createActivities } from '../activities';
import { createProviders } from '../activities/sandbox-providers';
import { SecretBox } from '../src/auth/secret-box';
import type { Config } from '../src/config';
import { SandboxesStore } from '../src/store/sandboxes-store';

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  db: Db;
  /** Path to the bundle written by `npm run build` (scripts/bundle-workflows.ts). */
  workflowBundlePath: string;
  /** Where sandboxes live and how providers reach their backends. */
  config: Pick<Config, 'dataDir' | 'sandboxes'>;
  secretsKey: string;
  identity?: string;
  shutdownGraceMs?: number;
}

export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  const identity = deps.identity ?? `${process.pid}@${os.hostname()}`;
  const workflowBundle: WorkflowBundleOption = { codePath: deps.workflowBundlePath };
  const activities = createActivities({
    db: deps.db,
    identity,
    taskQueue: deps.taskQueue,
    sandbox: {
      sandboxes: new SandboxesStore(deps.db),
      box: new SecretBox(deps.secretsKey),
      providers: createProviders(deps.config),
      startTimeoutMs: deps.config.sandboxes.startTimeoutMs,
      controlPlaneUrl: deps.config.sandboxes.controlPlaneUrl,
    },
  });
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    identity,
    workflowBundle,
    activities,
    shutdownGraceTime: deps.shutdownGraceMs ?? 10_000,
  });
}
