/** Reading a start task through the api, and waiting until it gets somewhere. */
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
