/**
 * The service the start-line suites share (test/start-queue*.test.ts): the api and a worker with quotas
 * small enough to reach (one running sandbox, two concurrent starts, three pending starts and six
 * conversations a user; a START_QUEUE_WAIT_MS of QUEUE_WAIT_MS), the scripted LLM, a Temporal client;
 * and the steps those suites repeat: a user with the LLM, a start sent or followed to its end, a task
 * waiting at a place in line, a user's line and its end.
 *
 * A suite calls useStartQueue() in its describe and imports the bindings below as they are. Safe: jest
 * gives every test file a module registry (an instance of this module) of its own, and SWC, its
 * transform, compiles imports to module-object reads, so tests see what the beforeAll assigned.
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

export let t: TestApi;
export let service: ServiceUnderTest;
export let dir: string;
export let llm: ScriptedLlm;
export let temporal: Client;

/**
 * Starts the suite's service in a beforeAll and ends it in an afterAll (call it inside the describe): the
 * bindings above are set once the beforeAll has run.
 */
export function useStartQueue(): void {
  beforeAll(async () => {
    service = await startServiceUnderTest('start-queue-', {
      SANDBOX_IDLE_TIMEOUT_MS: '0',
      USER_MAX_RUNNING_SANDBOXES: '1',
      USER_MAX_CONCURRENT_STARTS: '2',
      START_QUEUE_WAIT_MS: String(QUEUE_WAIT_MS),
      START_QUEUE_POLL_MS: '300',
      USER_MAX_PENDING_STARTS: '3',
      USER_MAX_CONVERSATIONS: '6',
    });
    ({ t, dataDir: dir } = service);
    llm = await new ScriptedLlm([]).start();
    temporal = await service.temporal();
  }, 60_000);

  afterAll(async () => {
    await service?.close();
    await llm?.close();
  });
}

/** A user with the suite's LLM as their organization's model. */
export const newUser = (): Promise<{ userId: string; key: string }> => newUserWithLlm(t, llm);

/** Sends a start (the api must accept it); answers its id. */
export const start = async (key: string, body: object = {}): Promise<string> => {
  const r = await t.request('POST', '/api/v1/app-conversations', { key, body });
  expect(r.status).toBe(200);
  return r.body.id as string;
};

/** Whether a task has ended, either way. */
export const ended: (s: any) => boolean = startTaskEnded;

/** A start sent (the api accepts it) and followed until it has ended: its task. */
export const startEnded = (key: string): Promise<any> => startUntilEnded(t, key, {});

/** Whether a task waits in line at `place`. */
export const waiting =
  (place: number) =>
  (task: any): boolean =>
    task.status === 'WAITING_FOR_SANDBOX' &&
    typeof task.detail === 'string' &&
    task.detail.startsWith(`Waiting in line at place ${place}: `);

/** The user's line, as its admission workflow answers. */
export const line = (userId: string): Promise<unknown> =>
  temporal.workflow.getHandle(startAdmissionWorkflowId(userId)).query(admissionLineQuery);

/** Once the line's workflow (the user's by default) has completed. */
export const lineEnded = (userId: string, workflowId = startAdmissionWorkflowId(userId)): Promise<true> =>
  eventually(async () => (await temporal.workflow.getHandle(workflowId).describe()).status.name === 'COMPLETED', {
    timeoutMs: 15_000,
    intervalMs: 200,
    what: 'the line to end',
  });
