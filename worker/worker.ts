/** Builds the Temporal worker: the prebuilt workflow bundle plus the activities over their dependencies. */
import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import type { Db } from 'mongodb';
import os from 'node:os';
import { createActivities } from '../activities';

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  db: Db;
  /** Path to the bundle written by `npm run build` (scripts/bundle-workflows.ts). */
  workflowBundlePath: string;
  identity?: string;
  shutdownGraceMs?: number;
}

export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  const identity = deps.identity ?? `${process.pid}@${os.hostname()}`;
  const workflowBundle: WorkflowBundleOption = { codePath: deps.workflowBundlePath };
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    identity,
    workflowBundle,
    activities: createActivities({ db: deps.db, identity, taskQueue: deps.taskQueue }),
    shutdownGraceTime: deps.shutdownGraceMs ?? 10_000,
  });
}
