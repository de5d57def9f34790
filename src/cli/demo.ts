/**
 * The labelled demo (`npm start -- --demo`, `npm run admin -- demo`): a whole agent conversation with the
 * scripted LLM on loopback, through the real system. It starts a sandbox through the api, records the
 * conversation, creates it in the sandbox's runtime, and prints every event from the live websocket until
 * the conversation finishes; the events stay in the log, searchable like any other.
 */
import { AgentControlClient, unwrap } from '../client';
import { DEMO_MODEL, DEMO_SCRIPT, DEMO_TASK } from '../llm/demo-script';
import { ScriptedLlm } from '../llm/scripted-llm';
import { describeEvent, terminalSafe } from './event-lines';
import { setTimeout as sleep } from 'node:timers/promises';
import { AGENT_SERVER, type SandboxView } from '../schemas/sandboxes';
import type { ConversationsStore } from '../store/conversations-store';

export interface DemoOptions {
  apiUrl: string;
  /** An API key of the user the demo runs as. */
  apiKey: string;
  userId: string;
  conversations: ConversationsStore;
  /** Where each line goes. */
  print: (line: string) => void;
  timeoutMs?: number;
  /** Where the scripted LLM listens on loopback (DEMO_LLM_PORT); 0: any free port. */
  llmPort?: number;
}

export interface DemoResult {
  conversationId: string;
  sandboxId: string;
  events: number;
  status: string;
}

export async function runDemo(o: DemoOptions): Promise<DemoResult> {
  const deadline = Date.now() + (o.timeoutMs ?? 120_000);
  const client = new AgentControlClient({ baseUrl: o.apiUrl, apiKey: o.apiKey });
  const llm = await new ScriptedLlm(DEMO_SCRIPT).start(o.llmPort ?? 0);
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), Math.max(0, deadline - Date.now()));
  try {
    o.print(`[demo] scripted LLM on ${llm.url}: every answer below is scripted, no model is called`);
    let sandbox = (await unwrap(client.api.POST('/api/v1/sandboxes', { body: {} }))) as unknown as SandboxView;
    o.print(`[demo] sandbox ${sandbox.id} starting (Temporal workflow sandbox-${sandbox.id})`);
    while (sandbox.status !== 'RUNNING') {
      if (sandbox.status === 'ERROR' || Date.now() > deadline)
        throw new Error(`the sandbox did not start: ${sandbox.status} ${sandbox.status_detail ?? ''}`);
      await sleep(200);
      [sandbox] = (await unwrap(
        client.api.GET('/api/v1/sandboxes', { params: { query: { id: [sandbox.id] } } }),
      )) as unknown as [SandboxView];
    }
    const runtimeUrl = sandbox.exposed_urls?.find((u) => u.name === AGENT_SERVER)?.url;
    const sessionKey = sandbox.session_api_key;
    if (!runtimeUrl || !sessionKey) throw new Error(`the running sandbox gives no ${AGENT_SERVER} url or session key`);
    const conversation = await o.conversations.create({
      userId: o.userId,
      sandboxId: sandbox.id,
      sessionApiKey: sessionKey,
    });
    o.print(`[demo] conversation ${conversation.id} in the runtime at ${runtimeUrl}`);

    // The whole log from its start (resend_all), so no event is missed whenever the tail connects.
    let events = 0;
    const followed = (async () => {
      for await (const e of client.events.tail(conversation.id, { signal: stop.signal })) {
        if (e.kind === 'StreamingDeltaEvent') continue;
        events++;
        o.print(terminalSafe(`[demo] ${String(events).padStart(3)} ${e.kind.padEnd(29)} ${describeEvent(e)}`));
        if (e.kind === 'ConversationStateUpdateEvent' && (e.value === 'finished' || e.value === 'error'))
          return e.value;
      }
      return 'timed out';
    })();
    followed.catch(() => undefined); // awaited below; a failure before then must not go unhandled
    // The runtime's own api (in the sandbox), not the service's: no generated client for it.
    const created = await fetch(`${runtimeUrl}/api/conversations`, {
      method: 'POST',
      headers: { 'X-Session-API-Key': sessionKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        conversation_id: conversation.id,
        agent: {
          llm: { model: DEMO_MODEL, base_url: llm.url },
          system_message_suffix: 'This is a demo conversation played by a scripted LLM.',
        },
        initial_message: { content: [{ text: DEMO_TASK }], run: true },
        max_iterations: 20,
      }),
    });
    if (!created.ok)
      throw new Error(
        `POST ${runtimeUrl}/api/conversations answered ${created.status}: ${(await created.text()).slice(0, 300)}`,
      );
    const status = await followed;
    o.print(`[demo] ${status}: ${events} events, stored in the log; read them again with`);
    o.print(`[demo]   agent-control events search ${conversation.id}`);
    return { conversationId: conversation.id, sandboxId: sandbox.id, events, status };
  } finally {
    clearTimeout(timer);
    stop.abort();
    await llm.close();
  }
}
