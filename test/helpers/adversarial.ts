/**
 * What the adversarial suites (test/adversarial*.test.ts) share: the api they attack (no worker: starts and
 * sandboxes stay pending), the user whose own conversation "own" requests reach, the health check after
 * each batch, and the tally each suite prints when it ends.
 */
import { startTestApi, type TestApi } from './api';
import { testConfig } from './env';
import { messages } from './event-samples';

/** The api alone, with short request and sandbox operation timeouts. */
export const startAdversarialApi = (): Promise<TestApi> =>
  startTestApi(testConfig({ REQUEST_TIMEOUT_MS: '5000', SANDBOX_OPERATION_TIMEOUT_MS: '2000' }));

/** A new user and a conversation of theirs with five messages: the credentials of "own" requests. */
export async function ownConversation(
  t: TestApi,
): Promise<{ key: string; sessionKey: string; conversationId: string }> {
  const a = await t.newUser();
  const ac = await t.newConversation(a.userId);
  await t.ingest(ac.conversationId, ac.sessionKey, messages(5));
  return { key: a.key, sessionKey: ac.sessionKey, conversationId: ac.conversationId };
}

/** The api healthy and ready. */
export async function expectHealthy(t: TestApi): Promise<void> {
  expect((await t.request('GET', '/health')).status).toBe(200);
  expect((await t.request('GET', '/ready')).status).toBe(200);
}

/** What a suite sent, counted as it goes. */
export interface Tally {
  requests: number;
  operations: Set<string>;
  statuses: Map<number, number>;
  raw: number;
  frames: number;
  heapGrowthMb: number;
}

export const newTally = (): Tally => ({
  requests: 0,
  operations: new Set<string>(),
  statuses: new Map<number, number>(),
  raw: 0,
  frames: 0,
  heapGrowthMb: NaN,
});

/** One line of what the suite sent (the parts it sent anything of) and, when measured, the heap it left. */
export function logTally(tally: Tally): void {
  const parts: string[] = [];
  if (tally.operations.size > 0) {
    const statuses = [...tally.statuses.entries()]
      .sort(([x], [y]) => x - y)
      .map(([s, n]) => `${s}:${n}`)
      .join(' ');
    parts.push(`${tally.requests} generated requests over ${tally.operations.size} operations (statuses ${statuses})`);
  }
  if (tally.raw > 0 || tally.frames > 0) parts.push(`${tally.raw} raw connections, ${tally.frames} websocket frames`);
  const heap = Number.isNaN(tally.heapGrowthMb) ? '' : `; heap kept after them ${tally.heapGrowthMb} MB more`;
  console.log(`adversarial suite: ${parts.join(', ') || 'nothing sent'}${heap}`);
}
