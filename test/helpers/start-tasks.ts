/**
 * Start tasks in tests: a record as the api accepts one, reading it through the api and waiting until it
 * gets somewhere, the LLM a start needs.
 */
import type { Client } from '@temporalio/client';
import {
  echoRequest,
  START_TASK_STATUSES,
  StartRequestSchema,
  type StartRequest,
} from '../../src/schemas/app-conversations';
import { startTaskWorkflowId, type StartTaskSnapshot } from '../../src/temporal/shared';
import type { TestApi } from './api';
import { eventually } from './eventually';

/** A WORKING task's record for conversation `id` (the task's id too), its request echoed as the api's accept writes it. */
export const acceptedTaskRecord = (
  userId: string,
  id: string,
  request: StartRequest = StartRequestSchema.parse({ conversation_id: id }),
) => ({
  id,
  created_by_user_id: userId,
  conversation_id: id,
  status: 'WORKING' as const,
  detail: null,
  request: echoRequest(request) as Record<string, unknown>,
  app_conversation_id: null,
  sandbox_id: null,
  agent_server_url: null,
});

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

/** Whether the task has ended, either way. */
export const startTaskEnded = (s: any) => s.status === 'READY' || s.status === 'ERROR';

/** Sends a start (the api must accept it: 200) and answers its task once it has ended, READY or ERROR. */
export async function startUntilEnded(t: TestApi, key: string, body: object, timeoutMs = 60_000): Promise<any> {
  const accepted = await t.request('POST', '/api/v1/app-conversations', { key, body });
  expect(accepted.status).toBe(200);
  return waitForStartTask(t, key, accepted.body.id, startTaskEnded, timeoutMs);
}

/** An LLM of the key's organization for starts that send no message: one must be set, and nothing calls it. */
export const setUnusedOrgLlm = (t: TestApi, key: string) =>
  t.setOrgLlm(key, { model: 'unused-model', base_url: 'http://127.0.0.1:9/v1' });

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
