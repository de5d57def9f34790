/**
 * The service the suites acting on started conversations share (test/app-conversation-actions*.test.ts):
 * the api and a worker with process sandboxes kept running (no idle timeout), the scripted LLM as the
 * organization's model of two users, a demo repository with a skill; and the steps those suites repeat:
 * a start on the repository until it has ended, the conversation as the api shows it, the log once the
 * agent is in a state, a follow-up message, a message for the conversation's queue.
 *
 * A suite calls useAppConversationActions() in its describe and imports the bindings below as they are:
 * each test file gets its own module registry from jest, so its own instance of them, and SWC (jest's
 * transform) compiles imports to module-object reads, so tests see what the beforeAll assigned.
 */
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { logWhenExecution, newUserWithLlm } from './agent';
import type { TestApi } from './api';
import { bareRepo } from './git-repo';
import { startServiceUnderTest, type ServiceUnderTest } from './service';
import { startUntilEnded } from './start-tasks';

/** The texts of the user's messages in a conversation's log, in order. */
export const userTexts = (log: any[]) =>
  log
    .filter((e) => e.kind === 'MessageEvent' && e.source === 'user')
    .map((e) => e.llm_message.content.map((c: any) => c.text).join(''));

export let t: TestApi;
export let service: ServiceUnderTest;
export let dataDir: string;
export let llm: ScriptedLlm;
export let user: { userId: string; key: string };
export let other: { userId: string; key: string };
export let repo: string;

/**
 * Starts the suite's service in a beforeAll and ends it in an afterAll (call it inside the describe): the
 * bindings above are set once the beforeAll has run.
 */
export function useAppConversationActions(): void {
  beforeAll(async () => {
    service = await startServiceUnderTest('actions-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      START_SETUP_TIMEOUT_MS: '20000',
    });
    ({ t, dataDir } = service);
    llm = await new ScriptedLlm([]).start();
    user = await newUserWithLlm(t, llm);
    other = await newUserWithLlm(t, llm);
    repo = bareRepo(dataDir, 'demo', {
      'README.md': '# demo\n',
      '.agents/skills/testing.md': '---\nname: testing\ntriggers: [tests]\n---\nRun make test.\n',
    });
  });

  afterAll(async () => {
    await service?.close();
    await llm?.close();
  });
}

/** Starts a conversation on the demo repository (no initial message); its task once it has ended. */
export const startReady = (body: object = {}): Promise<any> =>
  startUntilEnded(t, user.key, { selected_repository: repo, ...body });

/** The app conversation as `key`'s user (the suite's user by default) sees it, or null. */
export const view = async (id: string, key = user.key): Promise<any> =>
  (await t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key })).body[0];

/** The log once the agent's execution status is `status` ('finished' by default). */
export const settled = (id: string, status = 'finished'): Promise<any[]> => logWhenExecution(t, user.key, id, status);

/** A follow-up message with `text`, through the app conversation's send-message. */
export const sendMessage = (id: string, text: string): ReturnType<TestApi['request']> =>
  t.request('POST', `/api/v1/app-conversations/${id}/send-message`, {
    key: user.key,
    body: { content: [{ text }] },
  });

/** A message for the conversation's queue (pending-messages); `messageId` makes sending it again idempotent. */
export const queueMessage = (
  id: string,
  text: string,
  opts: { messageId?: string; key?: string } = {},
): ReturnType<TestApi['request']> =>
  t.request('POST', `/api/v1/conversations/${id}/pending-messages`, {
    key: opts.key ?? user.key,
    body: { ...(opts.messageId ? { id: opts.messageId } : {}), content: [{ text }] },
  });
