/**
 * The service the app-conversation start suites share (test/app-conversations*.test.ts): the api and a
 * worker with process sandboxes kept running (no idle timeout) and a 20 s setup script bound, git host A
 * played by a loopback stand-in, the scripted LLM as the organization's model of one user; stream-start
 * read whole, and the workflows a visibility query lists.
 * A suite calls useAppConversationStarts() in its describe and imports the bindings below: jest gives each
 * test file its own module registry (so its own instance of them), and its SWC transform compiles imports
 * to reads of the module object, so a test reads what the beforeAll assigned.
 */
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { START_TASK_STATUSES } from '../../src/schemas/app-conversations';
import { newUserWithLlm } from './agent';
import type { TestApi } from './api';
import { eventually } from './eventually';
import { GitHostStandIn } from './git-host-stand-in';
import { startServiceUnderTest, type ServiceUnderTest } from './service';

/** Every status before READY, in order. */
export const STATUSES = START_TASK_STATUSES.filter((s) => s !== 'READY' && s !== 'ERROR');

export let t: TestApi;
export let service: ServiceUnderTest;
export let dataDir: string;
export let llm: ScriptedLlm;
export let user: { userId: string; key: string };
export let gitHost: GitHostStandIn;

/**
 * Starts the suite's service in a beforeAll and ends it in an afterAll (call it inside the describe): the
 * bindings above are set once the beforeAll has run.
 */
export function useAppConversationStarts(): void {
  beforeAll(async () => {
    gitHost = await new GitHostStandIn().start();
    service = await startServiceUnderTest('starts-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      START_SETUP_TIMEOUT_MS: '20000',
      GIT_HOST_A_API_URL: gitHost.url,
    });
    ({ t, dataDir } = service);
    llm = await new ScriptedLlm([]).start();
    user = await newUserWithLlm(t, llm);
  });

  afterAll(async () => {
    await service?.close();
    await llm?.close();
    await gitHost?.close();
  });
}

/** The workflows a visibility query lists, once it lists `atLeast` (visibility is eventually consistent). */
export async function workflowsMatching(
  query: string,
  atLeast = 1,
): Promise<{ workflowId: string; searchAttributes: Record<string, unknown[]> }[]> {
  const client = await service.temporal();
  return await eventually(
    async () => {
      const listed: { workflowId: string; searchAttributes: Record<string, unknown[]> }[] = [];
      for await (const w of client.workflow.list({ query }))
        listed.push({
          workflowId: w.workflowId,
          searchAttributes: w.searchAttributes as Record<string, unknown[]>,
        });
      return listed.length >= atLeast ? listed : false;
    },
    { timeoutMs: 10_000, intervalMs: 200, what: `a workflow matching ${query}` },
  );
}

/** POSTs stream-start and reads the whole JSON array it streams. */
export async function streamStart(body: object, key = user.key): Promise<{ status: number; body: any }> {
  const res = await fetch(`${t.url}/api/v1/app-conversations/stream-start`, {
    method: 'POST',
    headers: { 'X-Access-Token': key, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) };
}
