/**
 * The service with one user's sandbox RUNNING, as the runtime the agent suites (test/agent-runtime*.test.ts,
 * test/runtime-conversations*.test.ts) create their conversations in, and that runtime brought back after a
 * test killed it.
 *
 * A suite calls `useRuntimeUnderTest(prefix)` inside its describe and imports the bindings below (`t`,
 * `user`, `rt`, `workspace`, `dataDir`): the beforeAll it registers assigns them, its afterAll closes the
 * service. Sharing them this way is safe: jest gives each test file its own module registry, so each file
 * has its own instance of this module and of its bindings; and the SWC transform jest uses compiles an
 * import to a property read of the module object at each use, so the file sees the values the beforeAll
 * assigned (live bindings). A file that assigns a new runtime itself keeps its own `let rt` and takes the
 * first one from `onStarted`.
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

let service: ServiceUnderTest | undefined;
/** The api of the service `useRuntimeUnderTest` started. */
export let t: TestApi;
/** The service's data directory (the sandboxes' directories are under it). */
export let dataDir: string;
/** The user whose sandbox the runtime is. */
export let user: { userId: string; key: string };
/** The runtime as the beforeAll found it RUNNING. */
export let rt: Runtime;
/** The sandbox's workspace directory. */
export let workspace: string;

/**
 * Starts the service and the runtime in a beforeAll of the describe it is called in (`prefix` names the
 * service's directory), assigning the bindings above, and closes the service in its afterAll.
 */
export function useRuntimeUnderTest(prefix: string, onStarted?: (started: RuntimeUnderTest) => void): void {
  beforeAll(async () => {
    const started = await startRuntimeUnderTest(prefix);
    ({ service, user, rt, workspace } = started);
    ({ t, dataDir } = started.service);
    onStarted?.(started);
  });

  afterAll(async () => {
    await service?.close();
  });
}

/** Once the killed runtime's sandbox is ERROR, resumes it: a new runtime process, answered as the Runtime. */
export async function resumeKilledRuntime(t: TestApi, key: string, sandboxId: string): Promise<Runtime> {
  await waitForStatus(t, key, sandboxId, 'ERROR', 15_000);
  const resumed = await t.request('POST', `/api/v1/sandboxes/${sandboxId}/resume`, { key });
  // 200 once running; 202 when the new runtime was still starting at the answer deadline.
  if (resumed.status === 202) return runtimeOf(await waitForStatus(t, key, sandboxId, 'RUNNING', 60_000));
  expect(resumed).toMatchObject({ status: 200, body: { status: 'RUNNING' } });
  return runtimeOf(resumed.body);
}
