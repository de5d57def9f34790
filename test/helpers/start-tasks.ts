/** Reading a start task through the api, and waiting until it gets somewhere. */
import type { Client } from '@temporalio/client';
import { START_TASK_STATUSES } from '../../src/schemas/app-conversations';
import { startTaskWorkflowId, type StartTaskSnapshot } from '../../src/temporal/shared';
import type { TestApi } from './api';
import { eventually } from './eventually';

export const startTask = async (t: TestApi, key: string, id: string) =>
  (await t.request('GET', `/api/v1/app-conversations/start-tasks?ids=${id}`, { key })).body[0];

/** The task once `done` holds for it (every 200 ms, up to `timeoutMs`); fails with the last one read. */
export const waitForStartTask = (t: TestApi, key: string, id: string, done: (s: any) => boolean, timeoutMs = 60_000) =>
  eventually(
    async () => {
      const last = await startTask(t, key, id);
      if (!last || !done(last)) throw new Error(`start task ${id} did not get there; last: ${JSON.stringify(last)}`);
      return last;
    },
    { timeoutMs, intervalMs: 200 },
  );

/**
 * Each start's statuses, as its workflow kept them (the `snapshots` query): every status of a READY start
 * once and in order, a status told again only as a new place in line.
 */
export async function expectStatusesOnceInOrder(client: Client, ids: readonly string[]): Promise<void> {
  const inOrder = START_TASK_STATUSES.filter((s) => s !== 'ERROR');
  for (const id of ids) {
    const snapshots = await client.workflow.getHandle(startTaskWorkflowId(id)).query<StartTaskSnapshot[]>('snapshots');
    expect(snapshots.map((s) => s.status).filter((s, i, all) => s !== all[i - 1])).toEqual(inOrder);
    for (const [i, s] of snapshots.entries())
      if (i > 0 && s.status === snapshots[i - 1]!.status) expect(s.detail).toMatch(/^Waiting in line at place \d+/);
  }
}
