/**
 * The service with one user's sandbox RUNNING, as the runtime the agent suites create their conversations
 * in, and that runtime brought back after a test killed it.
 */
import path from 'node:path';
import type { Runtime } from './agent';
import { runtimeOf } from './agent';
import type { TestApi } from './api';
import { runningSandbox, waitForStatus } from './sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './service';

/** Quick health checks, so a runtime killed by a test is seen as gone within a second; no idle pause. */
export const QUICK_HEALTH_ENV = {
  SANDBOX_IDLE_TIMEOUT_MS: '0',
  SANDBOX_HEALTH_INTERVAL_MS: '200',
  SANDBOX_HEALTH_GRACE_MS: '600',
};

export interface RuntimeUnderTest {
  service: ServiceUnderTest;
  user: { userId: string; key: string };
  rt: Runtime;
  /** The sandbox's workspace directory, where the agent's tools work (a resumed runtime keeps it). */
  workspace: string;
}

/** The service (`prefix` names its directory), a new user, and that user's sandbox once RUNNING. */
export async function startRuntimeUnderTest(prefix: string): Promise<RuntimeUnderTest> {
  const service = await startServiceUnderTest(prefix, QUICK_HEALTH_ENV);
  try {
    const user = await service.t.newUser();
    const sandbox = await runningSandbox(service.t, user.key);
    const rt = runtimeOf(sandbox);
    return { service, user, rt, workspace: path.join(service.dataDir, 'sandboxes', rt.sandboxId, 'workspace') };
  } catch (e) {
    await service.close();
    throw e;
  }
}

/** Once the killed runtime's sandbox is ERROR, resumes it: a new runtime process, answered as the Runtime. */
export async function resumeKilledRuntime(t: TestApi, key: string, sandboxId: string): Promise<Runtime> {
  await waitForStatus(t, key, sandboxId, 'ERROR', 15_000);
  const resumed = await t.request('POST', `/api/v1/sandboxes/${sandboxId}/resume`, { key });
  expect(resumed).toMatchObject({ status: 200, body: { status: 'RUNNING' } });
  return runtimeOf(resumed.body);
}
