/**
 * A workflow that no worker answers (no worker polls its task queue): the api's Updates and queries end
 * with a 503 after WORKFLOW_ANSWER_TIMEOUT_MS instead of hanging. Real api, real Temporal dev server, no
 * worker at all.
 */
import { Client, Connection } from '@temporalio/client';
import { sandboxStateQuery, sandboxWorkflowId } from '../src/temporal/shared';
import { askWorkflow, NoWorkerAnswered } from '../src/temporal/workflow-answer';
import { startTestApi, type TestApi } from './helpers/api';
import { testConfig, testEnv } from './helpers/env';

const BOUND_MS = 1500;

describe('a workflow no worker answers', () => {
  let t: TestApi;
  let temporal: Connection;
  let client: Client;
  let user: { userId: string; key: string };

  beforeAll(async () => {
    // The operation bound stays at its default (60 s): only the answer bound may end these requests.
    t = await startTestApi(testConfig({ WORKFLOW_ANSWER_TIMEOUT_MS: String(BOUND_MS) }));
    temporal = await Connection.connect({ address: testEnv().temporalAddress });
    client = new Client({ connection: temporal, namespace: 'default' });
    user = await t.newUser();
  });

  afterAll(async () => {
    await t?.close();
    await temporal?.close();
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
    for (const [op, r] of [['pause', pause], ['resume', resume], ['delete', del]] as const) {
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
    for (const [p, method] of [['/api/v1/sandboxes/{id}/pause', 'post'], ['/api/v1/sandboxes/{id}/resume', 'post'], ['/api/v1/sandboxes/{id}', 'delete']] as const) {
      expect(doc.paths[p][method].responses['503'].description).toMatch(/^No worker answered within WORKFLOW_ANSWER_TIMEOUT_MS/);
    }
  });

  it('ends a query of the workflow with NoWorkerAnswered after the bound', async () => {
    const id = await newSandbox();
    const at = Date.now();
    const asked = askWorkflow(client, sandboxWorkflowId(id), BOUND_MS, () => client.workflow.getHandle(sandboxWorkflowId(id)).query(sandboxStateQuery));
    await expect(asked).rejects.toBeInstanceOf(NoWorkerAnswered);
    await expect(asked).rejects.toMatchObject({ workflowId: sandboxWorkflowId(id), boundMs: BOUND_MS, message: `No worker answered workflow ${sandboxWorkflowId(id)} within 1.5 s` });
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
