/**
 * The api the hostile-input suites share (test/hostile-input*.test.ts): the api alone with a 1.5 s
 * REQUEST_TIMEOUT_MS, one user, and the check that it is still healthy after an input.
 *
 * A suite calls useHostileInput() in its describe and imports t, key and userId as they are: jest loads
 * this module once per test file (a registry of its own each), and SWC, its transform, compiles imports
 * to reads of the module object, so a test reads the values the beforeAll assigned.
 */
import { startTestApi, type TestApi } from './api';
import { testConfig } from './env';

export let t: TestApi;
export let key: string;
export let userId: string;

/** Starts the api in a beforeAll and closes it in an afterAll (call it inside the describe). */
export function useHostileInput(): void {
  beforeAll(async () => {
    t = await startTestApi(testConfig({ REQUEST_TIMEOUT_MS: '1500' }));
    ({ key, userId } = await t.newUser());
  });
  afterAll(() => t.close());
}

/** Expects /health to answer 200. */
export const healthy = async (): Promise<void> => expect((await t.request('GET', '/health')).status).toBe(200);
