/**
 * `agent-control-admin bootstrap`, `demo` and `doctor`: a fresh install's first admin and key, a scripted
 * demo conversation through the running service, and a health check of worker and database.
 */
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { Option, type Command } from 'commander';
import type { Config } from '../config';
import { WORKFLOW_TYPES, diagnosticsWorkflowId, type DiagnosticsResult } from '../temporal/shared';
import type { AdminContext } from './admin-context';
import { withDatabase, withUser } from './admin-database';
import { CliError } from './admin-errors';
import { ADMIN_EMAIL, bootstrapAdmin } from './bootstrap';
import { runDemo } from './demo';
import { resolveServers } from './embedded-servers';

/** The longest `--timeout` taken: a day, far past any wait these commands need (and within a timer's range). */
const MAX_TIMEOUT_S = 86_400;

/** `--timeout <seconds>`: from 1 s to a day; anything else is refused before any work. */
const timeoutOption = (description: string, seconds: number) =>
  new Option('--timeout <seconds>', description).default(seconds).argParser((v) => {
    const n = Number(v);
    if (!(n >= 1 && n <= MAX_TIMEOUT_S))
      throw new CliError(`--timeout wants a number of seconds from 1 to ${MAX_TIMEOUT_S}, not ${v}`);
    return n;
  });

export function addBootstrapCommand(program: Command, cli: AdminContext) {
  program
    .command('bootstrap')
    .description('on a fresh install, create the admin user and its first API key')
    .action(async () => {
      const created = await withDatabase(cli.config(), ({ users, apiKeys, orgs }) =>
        bootstrapAdmin(users, apiKeys, orgs),
      );
      cli.print(
        created ?? {},
        created ? `admin user ${created.userId}, API key:\n${created.key}` : 'users exist already; nothing created',
      );
    });
}

export function addDemoCommand(program: Command, cli: AdminContext) {
  program
    .command('demo')
    .description(
      'play a labelled demo conversation with a scripted LLM (no LLM key needed) through the running service',
    )
    .option('--user <id-or-email>', 'the user it runs as', ADMIN_EMAIL)
    .addOption(timeoutOption('how long the whole demo may take', 120))
    .action(async (o: { user: string; timeout: number }) => {
      const c = cli.config();
      // The port `npm start` lets isolated sandboxes reach (or DEMO_LLM_PORT); any other, their firewall refuses.
      const llmPort = resolveServers(c).demoLlmPort;
      // Said only when the demo does not finish: a worker that is not isolated reaches any port.
      const unreachable = llmPort
        ? ''
        : 'isolated sandboxes (a worker run as root) reach no port of this machine that their firewall does not allow: ' +
          'play the demo against `npm start`, or start the worker with DEMO_LLM_PORT=<port> and ' +
          'SANDBOX_LOCAL_ALLOW=127.0.0.1:<port> and run the demo with the same DEMO_LLM_PORT';
      const result = await withUser(c, o.user, async (owner, { apiKeys, conversations }) => {
        // A key of its own for the demo's calls, revoked when it ends: the user's keys are not stored raw.
        const { key: info, raw } = await apiKeys.create(owner.id, 'demo');
        try {
          return await runDemo({
            apiUrl: c.api.publicBaseUrl,
            apiKey: raw,
            llmPort,
            userId: owner.id,
            conversations,
            print: cli.json() ? () => undefined : (line) => console.log(line),
            timeoutMs: o.timeout * 1000,
          });
        } finally {
          await apiKeys.revoke(info.id);
        }
      });
      if (cli.json()) console.log(JSON.stringify(result));
      if (result.status !== 'finished')
        throw new CliError(
          `the demo conversation ended ${result.status}${unreachable ? `; if its LLM calls failed: ${unreachable}` : ''}`,
        );
    });
}

export function addDoctorCommand(program: Command, cli: AdminContext) {
  program
    .command('doctor')
    .description('run a diagnostics workflow: a worker polls the task queue and reaches the database')
    .addOption(timeoutOption('how long to wait for a worker', 30))
    .action(async (o: { timeout: number }) => {
      const result = await runDiagnostics(cli.config(), o.timeout);
      cli.print(
        result,
        `worker ${result.worker.identity} on ${result.worker.taskQueue}; database ${result.database.ok ? `ok (${result.database.latencyMs} ms)` : `DOWN: ${result.database.error}`}`,
      );
      if (!result.database.ok) process.exitCode = 1;
    });
}

/** The diagnostics workflow run to its end on the task queue: a worker took it within `timeout` seconds. */
async function runDiagnostics(c: Config, timeout: number): Promise<DiagnosticsResult> {
  const { temporalAddress } = resolveServers(c);
  if (!temporalAddress) throw new CliError('TEMPORAL_ADDRESS is not set and no launcher runs on DATA_DIR');
  const connection = await Connection.connect({ address: temporalAddress });
  try {
    const client = new Client({ connection, namespace: c.temporal.namespace });
    return await client.workflow
      .execute<() => Promise<DiagnosticsResult>>(WORKFLOW_TYPES.diagnostics, {
        taskQueue: c.temporal.taskQueue,
        workflowId: diagnosticsWorkflowId(new Date()),
        workflowExecutionTimeout: `${timeout} seconds`,
      })
      .catch((e: unknown) => {
        if (e instanceof WorkflowFailedError) {
          throw new CliError(
            `no worker finished the diagnostics workflow on task queue ${c.temporal.taskQueue} within ${timeout} s: is the worker running?`,
          );
        }
        throw e;
      });
  } finally {
    await connection.close().catch(() => undefined); // the result (or the failure) is what the operator needs
  }
}
