/**
 * The conversation contract's end, on the conversation the earlier tests worked in
 * (conversation-contract-start.ts): the runtime killed (-9) mid-run with the api away, then resumed,
 * loses no event it had emitted; and the delete ends everything the sandbox ran.
 */
import pino from 'pino';
import { startApiServer } from '../../src/api/server';
import type { ScriptedLlm } from '../../src/llm/scripted-llm';
import { loggedEvents } from './agent';
import type { TestApi } from './api';
import type { ContractConversation } from './conversation-contract-start';
import type { ContractTarget } from './conversation-contract-target';
import { eventually } from './eventually';
import { waitForStatus } from './sandboxes';

export function contractCrash(target: ContractTarget, conversation: ContractConversation): void {
  let t: TestApi;
  let dir: string;
  let llm: ScriptedLlm;
  let user: { userId: string; key: string };
  let id: string;
  let sandboxId: string;
  const { record, handle, runtimeCount, expectWholeLog } = conversation;

  beforeEach(() => {
    ({ t, dir, llm, user, id, sandboxId } = conversation);
  });

  it('loses no event: the runtime killed (-9) mid-run with the api away; after a resume every event it had emitted is in the log, once', async () => {
    // Everything so far has arrived (the runtime's own count, reached by the log) before the api goes.
    const before = await eventually(
      async () => {
        const mine = (await loggedEvents(t, user.key, id)).length;
        expect(mine).toBe(await runtimeCount());
        return mine;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const [s] = (await t.request('GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: user.key })).body;
    const direct = (method: string, p: string, body?: unknown) =>
      fetch(s.exposed_urls[0].url + p, {
        method,
        headers: { 'X-Session-API-Key': s.session_api_key, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    llm.load([
      { tool_calls: [{ name: 'terminal', arguments: { command: 'echo while-away' } }] },
      { content: 'thinking for a long time', delay_ms: 120_000 },
    ]);
    const h = await handle();
    const calls = llm.requests.length;
    await t.api.close(); // every batch of the run fails and waits (in the runtime's memory, or its outbox)
    try {
      expect(
        (
          await direct('POST', `/api/conversations/${id}/events`, {
            role: 'user',
            content: [{ type: 'text', text: 'Work while nobody listens' }],
            run: true,
          })
        ).status,
      ).toBe(200);
      // Mid-run: the command ran and its observation was emitted, the next LLM call is under way.
      await eventually(async () => expect(llm.requests.length).toBe(calls + 2), { timeoutMs: 60_000, intervalMs: 200 });
      await target.kill(h);
      // The health check finds it gone before the api comes back.
      await eventually(async () => expect((await record()).status).toBe('ERROR'), {
        timeoutMs: 60_000,
        intervalMs: 200,
      });
    } finally {
      t.api = await startApiServer(
        t.config,
        { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! },
        pino({ level: 'silent' }),
      );
    }
    expect((await loggedEvents(t, user.key, id)).length).toBe(before); // nothing of the run arrived: it all waits in the dead runtime's state
    // Starting the dead runtime again outlasts the answer deadline: the resume is taken (202), then done.
    expect([200, 202]).toContain(
      (await t.request('POST', `/api/v1/sandboxes/${sandboxId}/resume`, { key: user.key })).status,
    );
    await waitForStatus(t, user.key, sandboxId, 'RUNNING', 180_000);
    // Whatever the runtime had emitted (and kept) reaches the log: its count and the log meet.
    const log = await eventually(
      async () => {
        const mine = await loggedEvents(t, user.key, id);
        expect(mine.length).toBe(await runtimeCount());
        return mine;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    await expectWholeLog(log);
    if (target.runtime === 'openhands') {
      // Event by event, not only the count: every id its log holds is stored.
      const [r] = (await t.request('GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: user.key })).body;
      const theirs: string[] = [];
      for (let page: string | null = null, n = 0; n === 0 || page; n++) {
        const res = await fetch(
          `${r.exposed_urls[0].url}/api/conversations/${id}/events/search?limit=100${page ? `&page_id=${page}` : ''}`,
          { headers: { 'X-Session-API-Key': r.session_api_key } },
        );
        const body = (await res.json()) as { items: { id: string }[]; next_page_id: string | null };
        theirs.push(...body.items.map((e) => e.id));
        page = body.next_page_id;
      }
      expect(theirs.filter((e) => !log.some((m) => m.id === e))).toEqual([]);
    }
    const run = log.slice(before);
    expect(JSON.stringify(run.find((e) => e.kind === 'MessageEvent'))).toContain('Work while nobody listens');
    expect(run.filter((e) => e.kind === 'ActionEvent').map((e) => e.tool_name)).toEqual(['terminal']);
    expect(JSON.stringify(run.find((e) => e.kind === 'ObservationEvent'))).toContain('while-away');
  }, 420_000);

  it('delete ends everything the sandbox ran', async () => {
    expect((await t.request('DELETE', `/api/v1/app-conversations/${id}`, { key: user.key })).status).toBe(200);
    await eventually(async () => expect(await target.running(sandboxId, dir)).toBe(false), {
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    expect((await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key: user.key })).body).toEqual([null]);
  }, 120_000);
}
