import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { DiagnosticsResult } from '../src/temporal/shared';
import { ACTIVITY_OPTIONS } from './activity-options';

const { describeWorker, checkDatabase } = proxyActivities<Activities>(ACTIVITY_OPTIONS.quick);

/**
 * Proves the whole path an operator cares about: a worker polls the task queue, runs workflow and
 * activity code, and reaches the database. Run by `agent-control-admin doctor`.
 */
export async function diagnosticsWorkflow(): Promise<DiagnosticsResult> {
  const worker = await describeWorker();
  const database = await checkDatabase();
  return { worker, database };
}
