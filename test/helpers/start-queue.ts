/**
 * The service the start-line suites share (test/start-queue*.test.ts): the api and a worker with quotas
 * small enough to reach (one running sandbox, two concurrent starts, three pending starts and six
 * conversations a user; a START_QUEUE_WAIT_MS of QUEUE_WAIT_MS), the scripted LLM, a Temporal client;
 * and the steps those suites repeat: a user with the LLM, a start sent or followed to its end, a task
 * waiting at a place in line, a user's line and its end.
 */
import type { Client } from '@temporalio/client';
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { admissionLineQuery, startAdmissionWorkflowId } from '../../src/temporal/shared';
import { newUserWithLlm } from './agent';
import type { TestApi } from './api';
import { eventually } from './eventually';
import { startServiceUnderTest, type ServiceUnderTest } from './service';
import { startTaskEnded, startUntilEnded } from './start-tasks';

export const QUEUE_WAIT_MS = 25_000;

export interface StartQueueSuite {
  t: TestApi;
  service: ServiceUnderTest;
  dir: string;
  llm: ScriptedLlm;
  temporal: Client;
  newUser(): Promise<{ userId: string; key: string }>;
  /** Sends a start (the api must accept it); answers its id. */
  start(key: string, body?: object): Promise<string>;
  /** Whether a task has ended, either way. */
  ended(s: any): boolean;
  /** A start sent (the api accepts it) and followed until it has ended: its task. */
  startEnded(key: string): Promise<any>;
  /** Whether a task waits in line at `place`. */
  waiting(place: number): (s: any) => boolean;
  /** The user's line, as its admission workflow answers. */
  line(userId: string): Promise<unknown>;
  /** Once the line's workflow (the user's by default) has completed. */
  lineEnded(userId: string, workflowId?: string): Promise<true>;
}

/**
 * Starts the suite's service in a beforeAll and ends it in an afterAll (call it inside the describe): the
 * answer's fields are set once the beforeAll has run; its steps may be taken out of it at once.
 */
export function startQueueSuite(): StartQueueSuite {
  const s = {} as StartQueueSuite;

  beforeAll(async () => {
    s.service = await startServiceUnderTest('start-queue-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      USER_MAX_RUNNING_SANDBOXES: '1',
      USER_MAX_CONCURRENT_STARTS: '2',
      START_QUEUE_WAIT_MS: String(QUEUE_WAIT_MS),
      START_QUEUE_POLL_MS: '300',
      USER_MAX_PENDING_STARTS: '3',
      USER_MAX_CONVERSATIONS: '6',
    });
    ({ t: s.t, dataDir: s.dir } = s.service);
    s.llm = await new ScriptedLlm([]).start();
    s.temporal = await s.service.temporal();
  }, 60_000);

  afterAll(async () => {
    await s.service?.close();
    await s.llm?.close();
  });

  s.newUser = () => newUserWithLlm(s.t, s.llm);
  s.start = async (key, body = {}) => {
    const r = await s.t.request('POST', '/api/v1/app-conversations', { key, body });
    expect(r.status).toBe(200);
    return r.body.id as string;
  };
  s.ended = startTaskEnded;
  s.startEnded = (key) => startUntilEnded(s.t, key, {});
  s.waiting = (place) => (task: any) =>
    task.status === 'WAITING_FOR_SANDBOX' &&
    typeof task.detail === 'string' &&
    task.detail.startsWith(`Waiting in line at place ${place}: `);
  s.line = (userId) => s.temporal.workflow.getHandle(startAdmissionWorkflowId(userId)).query(admissionLineQuery);
  s.lineEnded = (userId, workflowId = startAdmissionWorkflowId(userId)) =>
    eventually(async () => (await s.temporal.workflow.getHandle(workflowId).describe()).status.name === 'COMPLETED', {
      timeoutMs: 15_000,
      intervalMs: 200,
      what: 'the line to end',
    });

  return s;
}
