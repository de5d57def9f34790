/**
 * The service the app-conversation start suites share (test/app-conversations*.test.ts): the api and a
 * worker with process sandboxes kept running (no idle timeout) and a 20 s setup script bound, git host A
 * played by a loopback stand-in, the scripted LLM as the organization's model of one user; stream-start
 * read whole, and the workflows a visibility query lists.
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

export interface StartsSuite {
  t: TestApi;
  service: ServiceUnderTest;
  dataDir: string;
  llm: ScriptedLlm;
  user: { userId: string; key: string };
  gitHost: GitHostStandIn;
  /** The workflows a visibility query lists, once it lists `atLeast` (visibility is eventually consistent). */
  workflowsMatching(
    query: string,
    atLeast?: number,
  ): Promise<{ workflowId: string; searchAttributes: Record<string, unknown[]> }[]>;
  /** POSTs stream-start and reads the whole JSON array it streams. */
  streamStart(body: object, key?: string): Promise<{ status: number; body: any }>;
}

/**
 * Starts the suite's service in a beforeAll and ends it in an afterAll (call it inside the describe): the
 * answer's fields are set once the beforeAll has run.
 */
export function appConversationStartsSuite(): StartsSuite {
  const s = {} as StartsSuite;

  beforeAll(async () => {
    s.gitHost = await new GitHostStandIn().start();
    s.service = await startServiceUnderTest('starts-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      START_SETUP_TIMEOUT_MS: '20000',
      GIT_HOST_A_API_URL: s.gitHost.url,
    });
    ({ t: s.t, dataDir: s.dataDir } = s.service);
    s.llm = await new ScriptedLlm([]).start();
    s.user = await newUserWithLlm(s.t, s.llm);
  });

  afterAll(async () => {
    await s.service?.close();
    await s.llm?.close();
    await s.gitHost?.close();
  });

  s.workflowsMatching = async (query, atLeast = 1) => {
    const client = await s.service.temporal();
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
  };

  s.streamStart = async (body, key = s.user.key) => {
    const res = await fetch(`${s.t.url}/api/v1/app-conversations/stream-start`, {
      method: 'POST',
      headers: { 'X-Access-Token': key, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text) };
  };

  return s;
}
