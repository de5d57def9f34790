/**
 * A harness for agent conversations through the control plane: a sandbox's runtime (a real process), a
 * conversation record in the control plane with the sandbox's session key, a scripted LLM per
 * conversation, and readers of the event log (the api's search) and of the runtime's view.
 */
import { ScriptedLlm, type ScriptStep } from '../../src/llm/scripted-llm';
import type { TestApi } from './api';
import { eventually } from './eventually';
import { agentUrl } from './sandboxes';

export interface Runtime {
  url: string;
  key: string;
  sandboxId: string;
}

/** The runtime of a RUNNING sandbox as the api shows it: its agent server's address and session key. */
export const runtimeOf = (sandbox: any): Runtime => ({
  url: agentUrl(sandbox),
  key: sandbox.session_api_key,
  sandboxId: sandbox.id,
});

export interface AgentConversation {
  id: string;
  llm: ScriptedLlm;
  runtime: Runtime;
}

/** Calls the runtime's API with the session key; JSON in and out. */
export async function runtimeCall(
  rt: Runtime,
  method: string,
  path: string,
  body?: unknown,
  key = rt.key,
): Promise<{ status: number; body: any }> {
  const res = await fetch(rt.url + path, {
    method,
    headers: {
      ...(key ? { 'X-Session-API-Key': key } : {}),
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Registers the conversation with the control plane, then creates it in the runtime with a scripted LLM. */
export async function startAgentConversation(
  t: TestApi,
  user: { userId: string },
  rt: Runtime,
  script: ScriptStep[],
  /** Fields of the create request; `llm` and `agent` are merged into the agent settings. */
  request: Record<string, any> = {},
  message: string | null = 'Please do the task.',
): Promise<AgentConversation & { created: { status: number; body: any } }> {
  const llm = await new ScriptedLlm(script).start();
  const c = await t.conversations.create({ userId: user.userId, sandboxId: rt.sandboxId, sessionApiKey: rt.key });
  const { llm: llmOverrides, agent, ...rest } = request;
  const created = await runtimeCall(rt, 'POST', '/api/conversations', {
    conversation_id: c.id,
    agent: { llm: { model: 'scripted-model', base_url: llm.url, api_key: 'sk-test', ...llmOverrides }, ...agent },
    ...(message ? { initial_message: { content: [{ text: message }], run: true } } : {}),
    ...rest,
  });
  return { id: c.id, llm, runtime: rt, created };
}

/** A new user whose organization's LLM is `llm` (the scripted one), as starts and follow-ups call it. */
export async function newUserWithLlm(t: TestApi, llm: { url: string }): Promise<{ userId: string; key: string }> {
  const user = await t.newUser();
  await t.setOrgLlm(user.key, { model: 'scripted-model', base_url: llm.url, api_key: 'sk-org' });
  return user;
}

export async function conversationInfo(c: AgentConversation): Promise<any> {
  const r = await runtimeCall(c.runtime, 'GET', `/api/conversations/${c.id}`);
  if (r.status !== 200) throw new Error(`GET conversation answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Polls the runtime until the conversation is in `status`. */
export function waitForExecution(c: AgentConversation, status: string, timeoutMs = 20_000): Promise<any> {
  return eventually(
    async () => {
      const last = await conversationInfo(c);
      if (last.execution_status !== status)
        throw new Error(
          `conversation ${c.id} did not reach ${status} within ${timeoutMs} ms; last: ${JSON.stringify(last)}`,
        );
      return last;
    },
    { timeoutMs, intervalMs: 50 },
  );
}

/** Every stored event of the conversation, read page by page through the api's search. */
export async function loggedEvents(t: TestApi, key: string, conversationId: string): Promise<any[]> {
  const out: any[] = [];
  let page: string | null = null;
  do {
    const r = await t.request(
      'GET',
      `/api/v1/conversation/${conversationId}/events/search?limit=100${page ? `&page_id=${encodeURIComponent(page)}` : ''}`,
      { key },
    );
    if (r.status !== 200) throw new Error(`event search answered ${r.status}: ${JSON.stringify(r.body)}`);
    out.push(...r.body.items);
    page = r.body.next_page_id;
  } while (page);
  return out;
}

/** Waits until the runtime has sent everything and the log holds all its events; returns the log. */
export function settledLog(t: TestApi, key: string, c: AgentConversation, timeoutMs = 20_000): Promise<any[]> {
  let log: any[] = [];
  return eventually(
    async () => {
      const info = await conversationInfo(c);
      if (info.unsent_events === 0) {
        log = await loggedEvents(t, key, c.id);
        if (log.length === info.events) return log;
      }
      throw new Error(`the log of ${c.id} did not settle: runtime ${JSON.stringify(info)}, log ${log.length}`);
    },
    { timeoutMs, intervalMs: 100 },
  );
}

/** The log (through the api) once the conversation's last reported execution status is `status`. */
export function logWhenExecution(
  t: TestApi,
  key: string,
  conversationId: string,
  status = 'finished',
  timeoutMs = 20_000,
): Promise<any[]> {
  return eventually(
    async () => {
      const log = await loggedEvents(t, key, conversationId);
      expect(states(log).at(-1)).toBe(status);
      return log;
    },
    { timeoutMs, intervalMs: 100 },
  );
}

export const kinds = (events: any[]) => events.map((e) => e.kind);
/** The execution states the log went through (the metrics updates left out). */
export const states = (events: any[]) =>
  events.filter((e) => e.kind === 'ConversationStateUpdateEvent' && e.key === 'execution_status').map((e) => e.value);
/** The metrics snapshots the log recorded, one per completion. */
export const metricsUpdates = (events: any[]) =>
  events.filter((e) => e.kind === 'ConversationStateUpdateEvent' && e.key === 'metrics').map((e) => e.value);
/** Kinds without the state updates, for order assertions. */
export const steps = (events: any[]) => kinds(events.filter((e) => e.kind !== 'ConversationStateUpdateEvent'));
