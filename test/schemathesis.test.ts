/**
 * The api against an outside judge: schemathesis (pinned and hash-checked in tools/schemathesis, installed
 * once by the test setup) reads the OpenAPI document the api serves and sends every operation generated
 * requests, with a user's key: its checks (a 5xx, an answer the document does not describe, a request the
 * document forbids that is accepted, a method or Allow header the document does not list, a resource
 * missing after its creation, ...), its coverage, fuzzing and stateful phases, a fixed seed and a bounded
 * number of examples. What it does not check is written, with the reason, in
 * tools/schemathesis/schemathesis.toml; every other failure fails this test.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { testEnv } from './helpers/env';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { repoRoot } from '../scripts/servers/paths';

describe('schemathesis against the api', () => {
  // The api and a worker: starts and sandboxes go their way (READY, ERROR) instead of waiting for one.
  let service: ServiceUnderTest;
  beforeAll(async () => {
    // Sandboxes of the built-in runtime only: an OpenHands agent server for each generated sandbox would
    // take the run far past its bound on 2 cores (its own suites test it). Its spec is still listed, and a
    // sandbox of it is refused as on a machine without it.
    service = await startServiceUnderTest('schemathesis-', (dataDir) => {
      fs.mkdirSync(path.join(dataDir, 'no-agent-server'));
      return { OPENHANDS_AGENT_SERVER_DIR: path.join(dataDir, 'no-agent-server') };
    });
  }, 60_000);
  afterAll(() => service?.close());

  it(
    'finds no failure in any operation: coverage, fuzzing and stateful phases, every check but those excluded with a reason',
    async () => {
      const t = service.t;
      const { key } = await t.newUser();
      const reports = fs.mkdtempSync(path.join(testEnv().dir, 'schemathesis-'));
      const args = [
        '-I',
        '-m',
        'schemathesis.cli',
        '--config-file',
        path.join(repoRoot(), 'tools', 'schemathesis', 'schemathesis.toml'),
        'run',
        `${t.url}/openapi.json`,
        '--header',
        `X-Access-Token: ${key}`,
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
      // Every operation of the document was tested (72 when this was written).
      expect(Number(/Tested: (\d+)/.exec(summary)?.[1])).toBeGreaterThanOrEqual(70);
    },
    10 * 60_000,
  );
});
