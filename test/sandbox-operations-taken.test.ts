/**
 * Pause, resume and delete whose result comes after the request's deadline: the sandbox's workflow took
 * the operation, so the answer is a 202 with the sandbox as it is (not a 503 that says it may still happen),
 * within the deadline, and the operation is then carried out. The answer deadline here is so short
 * (1.5 s, all of it the answer's margin) that no result is waited for: every operation that needs the
 * provider is answered at acceptance. Real api, worker, Temporal and process runtimes.
 */
import type { TestApi } from './helpers/api';
import { answerCheck, type AnswerCheck } from './helpers/openapi-answers';
import { SANDBOX_OPERATIONS, waitForStatus } from './helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

const DEADLINE_MS = 1500;

describe('an operation that outlasts the answer deadline', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let user: { userId: string; key: string };
  let check: AnswerCheck;

  beforeAll(async () => {
    service = await startServiceUnderTest('operations-taken-', {
      ANSWER_DEADLINE_MS: String(DEADLINE_MS),
      SANDBOX_IDLE_TIMEOUT_MS: '0',
    });
    t = service.t;
    user = await t.newUser();
    check = answerCheck((await t.request('GET', '/openapi.json')).body);
  });
  afterAll(async () => {
    await service?.close();
  });

  const timed = async (method: string, path: string) => {
    const at = Date.now();
    const r = await t.request(method, path, { key: user.key });
    return { ...r, ms: Date.now() - at };
  };

  it('answers pause, resume and delete 202 with the sandbox as it is, and carries each out', async () => {
    const created = await t.request('POST', '/api/v1/sandboxes', { key: user.key, body: {} });
    expect(created.status).toBe(200);
    const id: string = created.body.id;
    await waitForStatus(t, user.key, id, 'RUNNING');

    const steps = [
      {
        method: 'POST',
        path: `/api/v1/sandboxes/${id}/pause`,
        doc: '/api/v1/sandboxes/{id}/pause',
        was: 'RUNNING',
        then: 'PAUSED',
      },
      {
        method: 'POST',
        path: `/api/v1/sandboxes/${id}/resume`,
        doc: '/api/v1/sandboxes/{id}/resume',
        was: 'PAUSED',
        then: 'RUNNING',
      },
      {
        method: 'DELETE',
        path: `/api/v1/sandboxes/${id}`,
        doc: '/api/v1/sandboxes/{id}',
        was: 'RUNNING',
        then: 'DELETED',
      },
    ] as const;
    for (const step of steps) {
      const r = await timed(step.method, step.path);
      expect({ step: step.path, status: r.status, sandbox: r.body.status }).toEqual({
        step: step.path,
        status: 202,
        sandbox: step.was,
      });
      expect(r.ms).toBeLessThan(DEADLINE_MS);
      expect(check.errors(step.method, step.doc, 202, r.body)).toEqual([]);
      // Taken, not merely sent: the workflow carries it out after the answer.
      await waitForStatus(t, user.key, id, step.then);
    }
  });

  it('answers 200 when the workflow finished at acceptance: nothing to do', async () => {
    const created = await t.request('POST', '/api/v1/sandboxes', { key: user.key, body: {} });
    const id: string = created.body.id;
    await waitForStatus(t, user.key, id, 'RUNNING');
    // Resuming a RUNNING sandbox changes nothing: its Update is done when accepted, no wait needed.
    const r = await timed('POST', `/api/v1/sandboxes/${id}/resume`);
    expect({ status: r.status, sandbox: r.body.status }).toEqual({ status: 200, sandbox: 'RUNNING' });
    expect(r.ms).toBeLessThan(DEADLINE_MS);
  });

  it('documents the 202 of each operation', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    for (const [p, method] of SANDBOX_OPERATIONS) {
      expect(doc.paths[p][method].responses['202'].description).toMatch(/^Taken: the sandbox's workflow accepted/);
    }
  });
});
