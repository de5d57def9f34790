/**
 * Every side effect the workflows need, made by a factory over their dependencies (built once in
 * worker/). Workflows import only the type. Domain errors leave them as typed ApplicationFailures.
 */
import type { Db } from 'mongodb';
import type { DiagnosticsResult } from '../src/temporal/shared';
import { createSandboxActivities, type SandboxActivityDeps } from './sandbox-activities';
import { createStartTaskActivities, type StartTaskActivityDeps } from './start-task-activities';
import { createCallbackActivities, type CallbackActivityDeps } from './callback-activities';
import { createPendingMessageActivities, type PendingMessageActivityDeps } from './pending-message-activities';
import { createAdmissionActivities, type AdmissionActivityDeps } from './admission-activities';
import { withDomainFailures } from './domain-failure';

export interface ActivityDeps {
  db: Db;
  identity: string;
  taskQueue: string;
  sandbox: SandboxActivityDeps;
  startTask: StartTaskActivityDeps;
  callbacks: CallbackActivityDeps;
  pendingMessages: PendingMessageActivityDeps;
  admission: AdmissionActivityDeps;
}

export function createActivities(deps: ActivityDeps) {
  return withDomainFailures({
    async describeWorker(): Promise<DiagnosticsResult['worker']> {
      return { identity: deps.identity, taskQueue: deps.taskQueue };
    },

    async checkDatabase(): Promise<DiagnosticsResult['database']> {
      const started = performance.now();
      try {
        await deps.db.command({ ping: 1 });
        return { ok: true, latencyMs: Math.round(performance.now() - started) };
      } catch (e) {
        return { ok: false, latencyMs: Math.round(performance.now() - started), error: (e as Error).message };
      }
    },

    ...createSandboxActivities(deps.sandbox),
    ...createStartTaskActivities(deps.startTask),
    ...createCallbackActivities(deps.callbacks),
    ...createPendingMessageActivities(deps.pendingMessages),
    ...createAdmissionActivities(deps.admission),
  });
}

export type Activities = ReturnType<typeof createActivities>;
