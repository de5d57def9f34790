/**
 * The api against an outside judge: schemathesis (pinned and hash-checked in tools/schemathesis, installed
 * once by the test setup) reads the OpenAPI document the api serves and sends every operation generated
 * requests as two users, alice and bob (their keys in a Web Fuzzing Commons auth file, not on its command
 * line): its checks (a 5xx, an answer the document does not describe, a request the document forbids that
 * is accepted, a method or Allow header the document does not list, a resource missing after its creation,
 * one user reading an object the other made, ...), its coverage, fuzzing and stateful phases, a fixed seed
 * and a bounded number of examples. Git host A is a loopback stand-in where alice has an account and a
 * stored token, so the git searches reach a host rather than the missing internet. What it does not check
 * is written, with the reason, in tools/schemathesis/schemathesis.toml; every other failure fails this test.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { testEnv } from './helpers/env';
import { GitHostApiStandIn, standInRepo } from './helpers/git-host-api-stand-in';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { repoRoot } from '../scripts/servers/paths';

describe('schemathesis against the api', () => {
  // The api and a worker: starts and sandboxes go their way (READY, ERROR) instead of waiting for one.
  let service: ServiceUnderTest;
  let gitHost: GitHostApiStandIn;
  const ALICE_GIT_TOKEN = 'gho_schemathesis-alice-0123456789';
  beforeAll(async () => {
    gitHost = await new GitHostApiStandIn().start();
    gitHost.tokens.set(ALICE_GIT_TOKEN, 'alice-a');
    gitHost.users.set('alice-a', { id: 7, avatar_url: '', name: 'Alice', company: null, email: 'alice@example.com' });
    gitHost.ownRepos.set('alice-a', [standInRepo(1, 'alice-a/one'), standInRepo(2, 'alice-a/two', { private: true })]);
    gitHost.branches.set('alice-a/one', [{ name: 'main', sha: 'sha1', protected: false }]);
    // Sandboxes of the built-in runtime only: an OpenHands agent server for each generated sandbox would
    // take the run far past its bound on 2 cores (its own suites test it). Its spec is still listed, and a
    // sandbox of it is refused as on a machine without it.
    service = await startServiceUnderTest('schemathesis-', (dataDir) => {
      fs.mkdirSync(path.join(dataDir, 'no-agent-server'));
      return { OPENHANDS_AGENT_SERVER_DIR: path.join(dataDir, 'no-agent-server'), GIT_HOST_A_API_URL: gitHost.url };
    });
  }, 60_000);
  afterAll(async () => {
    await service?.close();
    await gitHost?.close();
  });

  it(
    'finds no failure in any operation: coverage, fuzzing and stateful phases, every check but those excluded with a reason',
    async () => {
      const t = service.t;
      const alice = await t.newUser();
      const bob = await t.newUser();
      const stored = await t.request('POST', '/api/v1/secrets/git-providers', {
        key: alice.key,
        body: { provider_tokens: { git_host_a: { token: ALICE_GIT_TOKEN } } },
      });
      expect(stored.status).toBe(200);
      const reports = fs.mkdtempSync(path.join(testEnv().dir, 'schemathesis-'));
      // The two users, as schemathesis reads them ([auth.wfc] in the toml): peers that must not see each other's objects.
      const users = path.join(reports, 'users.json');
      const user = (name: string, key: string) => ({ name, fixedHeaders: [{ name: 'X-Access-Token', value: key }] });
      fs.writeFileSync(users, JSON.stringify({ auth: [user('alice', alice.key), user('bob', bob.key)] }), {
        mode: 0o600,
      });
      const args = [
        '-I',
        '-m',
        'schemathesis.cli',
        '--config-file',
        path.join(repoRoot(), 'tools', 'schemathesis', 'schemathesis.toml'),
        'run',
        `${t.url}/openapi.json`,
        '--max-examples',
        '10',
        '--seed',
        '1',
        '--workers',
        '1',
        '--request-timeout',
        '15',
        '--no-color',
        '--report',
        'junit',
        '--report-junit-path',
        path.join(reports, 'junit.xml'),
      ];
      const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
        execFile(
          testEnv().schemathesisPython,
          args,
          {
            timeout: 8 * 60_000,
            maxBuffer: 64 << 20,
            cwd: reports,
            // No proxy, no settings of the user's: the api is on loopback.
            env: {
              PATH: process.env.PATH ?? '/usr/bin:/bin',
              HOME: reports,
              NO_PROXY: '*',
              // Refusals the api documents that no schema can say (read its header).
              SCHEMATHESIS_HOOKS: path.join(repoRoot(), 'tools', 'schemathesis', 'hooks.py'),
              SCHEMATHESIS_USERS: users,
            },
          },
          (err, stdout, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, out: `${stdout}\n${stderr}` }),
        );
      });
      const summary = run.out.slice(run.out.lastIndexOf('SUMMARY'));
      console.log(
        `schemathesis: ${summary
          .split('\n')
          .filter((l) => /generated|Tested:|failures?,|passed/.test(l))
          .join('; ')}`,
      );
      const junit = fs.readFileSync(path.join(reports, 'junit.xml'), 'utf8');
      const failures = [...junit.matchAll(/<testcase [^>]*name="([^"]+)"[^>]*>\s*<failure/g)].map((m) => m[1]);
      // The whole report on a failure: each case, its check, and the curl that reproduces it.
      expect({ code: run.code, failures, report: run.code === 0 ? '' : run.out }).toEqual({
        code: 0,
        failures: [],
        report: '',
      });
      // Its requests reached the api as alice (sandboxes of hers), and git host A with alice's stored token.
      expect(
        await t.database.db.collection('sandboxes').countDocuments({ created_by_user_id: alice.userId }),
      ).toBeGreaterThan(0);
      expect(gitHost.seen.some((r) => r.authorization === `Bearer ${ALICE_GIT_TOKEN}`)).toBe(true);
      // Every operation of the document was tested (72 when this was written).
      expect(Number(/Tested: (\d+)/.exec(summary)?.[1])).toBeGreaterThanOrEqual(70);
    },
    10 * 60_000,
  );
});
