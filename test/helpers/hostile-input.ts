/**
 * The api the hostile-input suites share (test/hostile-input*.test.ts): the api alone with a 1.5 s
 * REQUEST_TIMEOUT_MS, one user, and the check that it is still healthy after an input.
 */
import { startTestApi, type TestApi } from './api';
import { testConfig } from './env';

export interface HostileInputSuite {
  t: TestApi;
  key: string;
  userId: string;
  /** Expects /health to answer 200. */
  healthy(): Promise<void>;
}

/**
 * Starts the api in a beforeAll and closes it in an afterAll (call it inside the describe): the answer's
 * fields are set once the beforeAll has run; `healthy` may be taken out of it at once.
 */
export function hostileInputSuite(): HostileInputSuite {
  const s = {} as HostileInputSuite;
  s.healthy = async () => expect((await s.t.request('GET', '/health')).status).toBe(200);

  beforeAll(async () => {
    s.t = await startTestApi(testConfig({ REQUEST_TIMEOUT_MS: '1500' }));
    ({ key: s.key, userId: s.userId } = await s.t.newUser());
  });
  afterAll(() => s.t.close());

  return s;
}
