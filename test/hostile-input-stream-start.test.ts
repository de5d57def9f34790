/**
 * Regression tests of issue 13's defects in stream-start, against the real api: it always ends once the
 * task has, whatever its stored history (a hole where a status write was lost, a run started again, a
 * record that says ERROR while its history does not).
 */
import { randomUUID } from 'node:crypto';
import { echoRequest, StartRequestSchema, type StartTaskStatus } from '../src/schemas/app-conversations';
import { key, t, useHostileInput, userId } from './helpers/hostile-input';
import { setTimeout as sleep } from 'node:timers/promises';

describe('hostile input at the edge (issue 13)', () => {
  useHostileInput();

  describe('stream-start always ends once the task has', () => {
    const startTasks = () => t.stores.startTasks;
    const change = (status: StartTaskStatus) => ({
      status,
      detail: null,
      app_conversation_id: null,
      sandbox_id: null,
      agent_server_url: null,
    });
    const accepted = async (id: string) =>
      startTasks().create(
        {
          id,
          created_by_user_id: userId,
          conversation_id: id,
          ...change('WORKING'),
          request: echoRequest(StartRequestSchema.parse({ conversation_id: id })) as Record<string, unknown>,
        },
        null,
      );
    const stream = (id: string) =>
      t.request('POST', '/api/v1/app-conversations/stream-start', {
        key,
        body: { conversation_id: id },
        signal: AbortSignal.timeout(10_000),
      });

    it('a task READY whose history has a hole (a lost status write) streams to READY and ends', async () => {
      const id = randomUUID();
      await accepted(id);
      await startTasks().record(id, 0, change('WORKING'));
      await startTasks().record(id, 2, change('READY')); // step 1's write never landed: history [WORKING, null, READY]
      const r = await stream(id);
      expect(r.status).toBe(200);
      expect(r.body.map((s: { status: string }) => s.status)).toEqual(['WORKING', 'READY']);
    });

    it('a task whose run was started again (its history cleared) streams the new run to its end', async () => {
      const id = randomUUID();
      await accepted(id);
      for (const [i, status] of (['WORKING', 'WAITING_FOR_SANDBOX', 'PREPARING_REPOSITORY'] as const).entries())
        await startTasks().record(id, i, change(status));
      const streaming = stream(id);
      await sleep(500); // the stream has sent the lost run's three statuses
      const task = await startTasks().get(id);
      expect(await startTasks().clearHistoryIfUnchanged(id, task!.updated_at)).toBe(true);
      await startTasks().record(id, 0, change('WORKING'));
      await startTasks().record(id, 1, { ...change('ERROR'), detail: 'the new run failed' });
      const r = await streaming;
      expect(r.body.map((s: { status: string }) => s.status)).toEqual([
        'WORKING',
        'WAITING_FOR_SANDBOX',
        'PREPARING_REPOSITORY',
        'WORKING',
        'ERROR',
      ]);
    });

    it('a task whose record says ERROR but whose history does not ends with the record', async () => {
      const id = randomUUID();
      await accepted(id);
      await startTasks().record(id, 0, change('WORKING'));
      await t.database.db
        .collection<{ _id: string }>('start_tasks')
        .updateOne({ _id: id }, { $set: { status: 'ERROR', detail: 'gone' } });
      const r = await stream(id);
      expect(r.body.map((s: { status: string }) => s.status)).toEqual(['WORKING', 'ERROR']);
      expect(r.body.at(-1).detail).toBe('gone');
    });
  });
});
