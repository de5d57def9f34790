/** Where the global setup started the real servers, and per-file names so files never share state. */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { loadConfig, type Config } from '../../src/config';
import type { DockerTestEnv } from '../setup/docker';

export interface TestEnv {
  dir: string;
  mongoUri: string;
  ferretdbBackend: 'postgresql' | 'sqlite';
  /** FerretDB's PostgreSQL (with its password) on the postgresql backend. */
  postgresUrl?: string;
  temporalAddress: string;
  temporalUiUrl: string;
  namespace: string;
  workflowBundlePath: string;
  /** The dev server (the Temporal CLI), FerretDB, and the real Temporal server with its schema tool (the cluster suite). */
  binaries: { temporal: string; ferretdb: string; temporalServer: string; temporalSqlTool: string; temporalUi: string };
  /** The installed OpenHands agent server (OPENHANDS_AGENT_SERVER_DIR of the suites that run it). */
  agentServerDir: string;
  /** The Python of schemathesis's environment (run `-I -m schemathesis.cli`). */
  schemathesisPython: string;
  /** The engine and images of the docker tests (absent with AGENT_CONTROL_DOCKER_TESTS=off). */
  docker?: DockerTestEnv;
}

export function testEnv(): TestEnv {
  const file = process.env.AGENT_CONTROL_TEST_ENV;
  if (!file) throw new Error('AGENT_CONTROL_TEST_ENV is not set: run the tests through jest (global setup)');
  return JSON.parse(fs.readFileSync(file, 'utf8')) as TestEnv;
}

/** Where the tests' process sandboxes get their cgroups. */
export const TEST_CGROUP_PARENT = 'agent-control-test';

/** A fixed key for sealing secrets in tests (never used outside them). */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/** A name no other test file uses: a database, a task queue, an email. */
export const uniqueName = (prefix: string) => `${prefix}_${randomBytes(5).toString('hex')}`;

/** Config for this file: the shared servers, a database and task queue of its own, quiet logs. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const env = testEnv();
  return loadConfig(
    {
      MONGODB_URI: env.mongoUri,
      ...(env.postgresUrl ? { POSTGRES_URL: env.postgresUrl } : {}),
      TEMPORAL_ADDRESS: env.temporalAddress,
      MONGODB_DB: uniqueName('test'),
      TEMPORAL_TASK_QUEUE: uniqueName('tq'),
      API_PORT: '0',
      LOG_LEVEL: 'silent',
      SECRETS_KEY: TEST_SECRETS_KEY,
      LOG_FORMAT: 'json',
      READY_TIMEOUT_MS: '1500',
      MONGODB_SERVER_SELECTION_TIMEOUT_MS: '2000',
      // Tests run as root in CI, where process sandboxes would get a uid and a firewall rule each; the
      // files that test that isolation ask for it (test/root/process-isolation.test.ts).
      SANDBOX_PROCESS_ISOLATION: 'none',
      // Their sandboxes' cgroups (as root) apart from a service's on the same machine; the teardown removes them.
      SANDBOX_CGROUP_PARENT: TEST_CGROUP_PARENT,
      // A loop-mounted file system per sandbox would outlive the runtimes the tests kill without a delete
      // (and block removing their directories): the file that tests disks asks for them.
      SANDBOX_DISKS: 'off',
      OPENHANDS_AGENT_SERVER_DIR: env.agentServerDir,
      ...overrides,
    },
    false,
  );
}
