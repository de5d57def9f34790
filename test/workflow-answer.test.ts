/**
 * A workflow that no worker answers (no worker polls its task queue): the api's Updates and queries end
 * with a 503 after WORKFLOW_ANSWER_TIMEOUT_MS instead of hanging. Real api, real Temporal dev server, no
 * worker at all. And a workflow whose task fails on the worker that runs it (a bug in its code): the
 * Updates Temporal refuses for it are a 503 as well, at once.
 */
import type { Client } from '@temporalio/client';
import { google, temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import path from 'node:path';
import { WORKFLOW_INTERCEPTORS, WORKFLOWS_ENTRY } from '../scripts/bundle-workflows';
import { sandboxStateQuery, sandboxWorkflowId } from '../src/temporal/shared';
import { askWorkflow, isWorkflowTaskFailing, NoWorkerAnswered } from '../src/temporal/workflow-answer';
import type { TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { runningSandbox, runtimePid, SANDBOX_OPERATIONS, waitForStatus } from './helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';

const BOUND_MS = 1500;

describe('a workflow no worker answers', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let client: Client;
  let user: { userId: string; key: string };

  beforeAll(async () => {
    // The operation bound stays at its default (60 s): only the answer bound may end these requests.
    service = await startServiceUnderTest(
      'no-worker-answers-',
      { WORKFLOW_ANSWER_TIMEOUT_MS: String(BOUND_MS) },
      { worker: false },
    );
    t = service.t;
    client = await service.temporal();
    user = await t.newUser();
  });

  afterAll(async () => {
    await service?.close();
  });

  const newSandbox = async (): Promise<string> => {
    const r = await t.request('POST', '/api/v1/sandboxes', { key: user.key, body: {} });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('STARTING');
    return r.body.id;
  };

  it('answers pause, resume and delete with 503 and a detail after the bound, and changes nothing', async () => {
    const id = await newSandbox();
    const timed = async (method: string, path: string) => {
      const at = Date.now();
      const r = await t.request(method, path, { key: user.key });
      return { ...r, ms: Date.now() - at };
    };
    const [pause, resume, del] = await Promise.all([
      timed('POST', `/api/v1/sandboxes/${id}/pause`),
      timed('POST', `/api/v1/sandboxes/${id}/resume`),
      timed('DELETE', `/api/v1/sandboxes/${id}`),
    ]);
    for (const [op, r] of [
      ['pause', pause],
      ['resume', resume],
      ['delete', del],
    ] as const) {
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('5');
      expect(r.body.detail).toBe(
        `No worker answered the workflow of sandbox ${id} within 1.5 s (is a worker running?); the ${op} may still happen when one does: read the sandbox again`,
      );
      expect(r.ms).toBeGreaterThanOrEqual(BOUND_MS - 50);
      expect(r.ms).toBeLessThan(BOUND_MS + 3000);
    }
    const after = await t.request('GET', `/api/v1/sandboxes?id=${id}`, { key: user.key });
    expect(after.body[0].status).toBe('STARTING');
    // The workflow is still there, waiting for a worker: the operations may still happen.
    expect((await client.workflow.getHandle(sandboxWorkflowId(id)).describe()).status.name).toBe('RUNNING');
  });

  it('documents that 503 in the OpenAPI document', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    for (const [p, method] of SANDBOX_OPERATIONS) {
      expect(doc.paths[p][method].responses['503'].description).toMatch(
        /^No worker answered within WORKFLOW_ANSWER_TIMEOUT_MS/,
      );
    }
  });

  it('ends a query of the workflow with NoWorkerAnswered after the bound', async () => {
    const id = await newSandbox();
    const at = Date.now();
    const asked = askWorkflow(client, sandboxWorkflowId(id), BOUND_MS, () =>
      client.workflow.getHandle(sandboxWorkflowId(id)).query(sandboxStateQuery),
    );
    await expect(asked).rejects.toBeInstanceOf(NoWorkerAnswered);
    await expect(asked).rejects.toMatchObject({
      workflowId: sandboxWorkflowId(id),
      boundMs: BOUND_MS,
      message: `No worker answered workflow ${sandboxWorkflowId(id)} within 1.5 s`,
    });
    const ms = Date.now() - at;
    expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 50);
    expect(ms).toBeLessThan(BOUND_MS + 3000);
  });

  it('leaves nothing hanging: the api closes at once after those requests', async () => {
    const id = await newSandbox();
    const r = await t.request('POST', `/api/v1/sandboxes/${id}/pause`, { key: user.key });
    expect(r.status).toBe(503);
    const at = Date.now();
    await t.api.close();
    expect(Date.now() - at).toBeLessThan(3000);
    // afterAll closes it again through the helper, which closes the database too; a second close is harmless.
  });
});

describe('a workflow whose task is failing', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let client: Client;
  let user: { userId: string; key: string };

  beforeAll(async () => {
    // The real workflows, with an interceptor that fails the workflow task of every delete Update.
    const { code } = await bundleWorkflowCode({
      workflowsPath: WORKFLOWS_ENTRY,
      workflowInterceptorModules: [
        WORKFLOW_INTERCEPTORS,
        path.join(__dirname, 'fixtures', 'failing-update-interceptor.ts'),
      ],
      logger: new DefaultLogger('WARN'),
    });
    service = await startServiceUnderTest(
      'failing-task-',
      {
        WORKFLOW_ANSWER_TIMEOUT_MS: String(BOUND_MS),
        SANDBOX_HEALTH_INTERVAL_MS: '250',
        SANDBOX_HEALTH_GRACE_MS: '1000',
        SANDBOX_IDLE_TIMEOUT_MS: '0',
      },
      { workflowBundleCode: code },
    );
    t = service.t;
    client = await service.temporal();
    user = await t.newUser();
  });

  afterAll(async () => {
    // Their workflows would retry the failing task for ever.
    for await (const w of client.workflow.list({
      query: `TaskQueue = "${t.config.temporal.taskQueue}" AND ExecutionStatus = "Running"`,
    })) {
      await client.workflow
        .getHandle(w.workflowId)
        .terminate('the test is over')
        .catch(() => undefined);
    }
    await service?.close();
  });

  it('answers the Updates Temporal refuses for it with 503, Retry-After and a detail, at once; the sandbox stays as it was', async () => {
    const s = await runningSandbox(t, user.key);
    const timed = async () => {
      const at = Date.now();
      const r = await t.request('DELETE', `/api/v1/sandboxes/${s.id}`, { key: user.key });
      return { ...r, ms: Date.now() - at };
    };
    // The first deletes reach the workflow and fail its task: Temporal holds them until the answer bound.
    const first = await timed();
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('5');
    // Temporal goes on retrying the task (a timeout of 10 s each after the second attempt); from its
    // third attempt on it refuses Updates without asking a worker.
    const detail = `The workflow of sandbox ${s.id} is failing its workflow tasks (a worker cannot run it; its log says why), so the delete was not taken: try again later`;
    const refused = await eventually(
      async () => {
        const r = await timed();
        expect(r.body).toEqual({ detail });
        expect(r.ms).toBeLessThan(BOUND_MS);
        return r;
      },
      { timeoutMs: 45_000, intervalMs: 200 },
    );
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    const after = (await t.request('GET', `/api/v1/sandboxes?id=${s.id}`, { key: user.key })).body[0];
    expect(after.status).toBe('RUNNING');
    expect((await client.workflow.getHandle(sandboxWorkflowId(s.id)).describe()).status.name).toBe('RUNNING');
  }, 90_000);

  it('leaves the answers to what the caller asked as they were: a pause of a sandbox in ERROR is still a 409', async () => {
    const created = await runningSandbox(t, user.key);
    const pid = await runtimePid(t, created.id);
    process.kill(pid, 'SIGKILL');
    await waitForStatus(t, user.key, created.id, 'ERROR', 15_000);
    const pause = await t.request('POST', `/api/v1/sandboxes/${created.id}/pause`, { key: user.key });
    expect(pause.status).toBe(409);
    expect(pause.body.detail).toContain('is ERROR');
  }, 60_000);

  it('tells the refusal from other FAILED_PRECONDITION answers by its detail', () => {
    const grpcError = (code: number, typeUrl?: string) => {
      // As gRPC gives it: the status, with its details, in the trailing metadata.
      const detail = typeUrl && {
        type_url: typeUrl,
        value: temporal.api.errordetails.v1.WorkflowNotReadyFailure.encode({}).finish(),
      };
      const status = detail
        ? [Buffer.from(google.rpc.Status.encode({ code, message: 'refused', details: [detail] }).finish())]
        : [];
      const metadata = { get: (key: string) => (key === 'grpc-status-details-bin' ? status : []) };
      return Object.assign(new Error(`${code} refused`), { code, details: 'refused', metadata });
    };
    const notReady = 'type.googleapis.com/temporal.api.errordetails.v1.WorkflowNotReadyFailure';
    expect(isWorkflowTaskFailing(new Error('Workflow Update failed', { cause: grpcError(9, notReady) }))).toBe(true);
    expect(
      isWorkflowTaskFailing(
        grpcError(9, 'type.googleapis.com/temporal.api.errordetails.v1.NamespaceInvalidStateFailure'),
      ),
    ).toBe(false);
    expect(isWorkflowTaskFailing(grpcError(9))).toBe(false);
    expect(isWorkflowTaskFailing(grpcError(3, notReady))).toBe(false);
    expect(isWorkflowTaskFailing(new Error('Workflow Update failed'))).toBe(false);
  });
});
