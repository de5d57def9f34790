/**
 * The service the suites acting on started conversations share (test/app-conversation-actions*.test.ts):
 * the api and a worker with process sandboxes kept running (no idle timeout), the scripted LLM as the
 * organization's model of two users, a demo repository with a skill; and the steps those suites repeat:
 * a start on the repository until it has ended, the conversation as the api shows it, the log once the
 * agent is in a state, a follow-up message, a message for the conversation's queue.
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

export interface ActionsSuite {
  t: TestApi;
  service: ServiceUnderTest;
  dataDir: string;
  llm: ScriptedLlm;
  user: { userId: string; key: string };
  other: { userId: string; key: string };
  repo: string;
  /** Starts a conversation on the demo repository (no initial message); its task once it has ended. */
  startReady(body?: object): Promise<any>;
  /** The app conversation as `key`'s user (the suite's user by default) sees it, or null. */
  view(id: string, key?: string): Promise<any>;
  /** The log once the agent's execution status is `status` ('finished' by default). */
  settled(id: string, status?: string): Promise<any[]>;
  /** A follow-up message with `text`, through the app conversation's send-message. */
  sendMessage(id: string, text: string): ReturnType<TestApi['request']>;
  /** A message for the conversation's queue (pending-messages); `messageId` makes sending it again idempotent. */
  queueMessage(id: string, text: string, opts?: { messageId?: string; key?: string }): ReturnType<TestApi['request']>;
}

/**
 * Starts the suite's service in a beforeAll and ends it in an afterAll (call it inside the describe): the
 * answer's fields are set once the beforeAll has run; its steps may be taken out of it at once.
 */
export function appConversationActionsSuite(): ActionsSuite {
  const s = {} as ActionsSuite;

  beforeAll(async () => {
    s.service = await startServiceUnderTest('actions-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      START_SETUP_TIMEOUT_MS: '20000',
    });
    ({ t: s.t, dataDir: s.dataDir } = s.service);
    s.llm = await new ScriptedLlm([]).start();
    s.user = await newUserWithLlm(s.t, s.llm);
    s.other = await newUserWithLlm(s.t, s.llm);
    s.repo = bareRepo(s.dataDir, 'demo', {
      'README.md': '# demo\n',
      '.agents/skills/testing.md': '---\nname: testing\ntriggers: [tests]\n---\nRun make test.\n',
    });
  });

  afterAll(async () => {
    await s.service?.close();
    await s.llm?.close();
  });

  s.startReady = (body = {}) => startUntilEnded(s.t, s.user.key, { selected_repository: s.repo, ...body });
  s.view = async (id, key = s.user.key) =>
    (await s.t.request('GET', `/api/v1/app-conversations?ids=${id}`, { key })).body[0];
  s.settled = (id, status = 'finished') => logWhenExecution(s.t, s.user.key, id, status);
  s.sendMessage = (id, text) =>
    s.t.request('POST', `/api/v1/app-conversations/${id}/send-message`, {
      key: s.user.key,
      body: { content: [{ text }] },
    });
  s.queueMessage = (id, text, opts = {}) =>
    s.t.request('POST', `/api/v1/conversations/${id}/pending-messages`, {
      key: opts.key ?? s.user.key,
      body: { ...(opts.messageId ? { id: opts.messageId } : {}), content: [{ text }] },
    });

  return s;
}
