/** Worker process entry point: connect, register search attributes, run until SIGTERM or SIGINT. */
import { Client } from '@temporalio/client';
import { NativeConnection, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig, requireSecretsKey, requireServers, type Config } from '../src/config';
import { sandboxCgroups } from '../activities/sandbox-providers/process-cgroups';
import { sandboxDisks } from '../activities/sandbox-providers/process-disks';
import { sandboxTree } from '../activities/sandbox-providers';
import { createLogger, type Logger } from '../src/logger';
import { exitWithParent } from '../src/process/parent-watch';
import { beatWhileAlive, workerHeartbeatFile } from '../src/process/heartbeat';
import { openDatabase } from '../src/store/mongo';
import { boundedConnection } from '../src/temporal/call-bounds';
import { ensureSearchAttributes } from '../src/temporal/search-attributes-ensure';
import { installTracing } from '../src/observability/tracing';
import { createWorker, isHostPollerNotice, type HostWorker } from './worker';
import { setTimeout as sleep } from 'node:timers/promises';

async function connectWithRetry(address: string, log: (msg: string) => void): Promise<NativeConnection> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await NativeConnection.connect({ address });
    } catch (e) {
      if (attempt >= 60) throw e;
      if (attempt === 1 || attempt % 10 === 0)
        log(`Temporal at ${address} does not answer yet (${(e as Error).message}); retrying`);
      await sleep(1000);
    }
  }
}

/** Process sandboxes that are not isolated say so at every start, with what the operator can do. */
function warnAboutProcessIsolation(config: Config, logger: Logger): void {
  const { processIsolation, processUsers } = config.sandboxes;
  if (processIsolation === 'user') return;
  const line = '*'.repeat(100);
  const why =
    processIsolation === 'none'
      ? "SANDBOX_PROCESS_ISOLATION=none: process sandboxes run as this worker's user, shared by every user of the service."
      : `process sandboxes are NOT isolated (the worker does not run as root): only ${processUsers.length ? processUsers.join(', ') : 'nobody'} (SANDBOX_PROCESS_USERS) may start them.`;
  logger.warn(
    `\n${line}\n${why}\nA sandbox's commands can read this worker's files (DATA_DIR, its secrets key, other sandboxes) and reach the database and Temporal.\nRun the worker as root for a uid per sandbox, or use the docker provider.\n${line}`,
  );
}

/** Process sandboxes without a cgroup (SANDBOX_CGROUPS=auto where none is usable) are limited in nothing: said once. */
function warnAboutCgroups(config: Config, logger: Logger): void {
  const { why } = sandboxCgroups(config.sandboxes.cgroups, config.sandboxes.cgroupParent);
  if (why)
    logger.warn(
      `process sandboxes run without cgroups (${why}): no memory, CPU or process limit holds for them; one can slow or stop the others`,
    );
  const disks = sandboxDisks(config.sandboxes.disks, sandboxTree(config));
  if (disks.why)
    logger.warn(
      `process sandboxes run without a file system of their own (${disks.why}): no disk limit holds for them; one can fill the host's disk`,
    );
}

/**
 * Installs the SDK's runtime: its log lines go to the worker's logger (the host queue's poller notice at
 * debug) and, with WORKER_METRICS_ADDRESS, its metrics are served for Prometheus.
 */
function installRuntime(config: Config, logger: Logger): void {
  try {
    Runtime.install({
      logger: {
        log: (level, message, meta) => logger[level.toLowerCase() as Lowercase<typeof level>](meta ?? {}, message),
        trace: (m, meta) => logger.trace(meta, m),
        debug: (m, meta) => logger.debug(meta, m),
        info: (m, meta) => logger.info(meta, m),
        warn: (m, meta) => (isHostPollerNotice(m) ? logger.debug(meta, m) : logger.warn(meta, m)),
        error: (m, meta) => logger.error(meta, m),
      },
      telemetryOptions: {
        logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} },
        // The SDK's own metrics (workflow and activity outcomes and latencies by type, polls, slots), served
        // by its core for Prometheus at http://WORKER_METRICS_ADDRESS/metrics.
        ...(config.metrics.workerAddress
          ? {
              metrics: {
                prometheus: {
                  bindAddress: config.metrics.workerAddress,
                  countersTotalSuffix: true,
                  useSecondsForDurations: true,
                },
              },
            }
          : {}),
      },
    });
  } catch (e) {
    // The exporter's own message names no variable (a busy port, an address it cannot bind).
    if (config.metrics.workerAddress)
      throw new Error(`WORKER_METRICS_ADDRESS=${config.metrics.workerAddress}: ${(e as Error).message}`, { cause: e });
    throw e;
  }
  if (config.metrics.workerAddress)
    logger.info({ url: `http://${config.metrics.workerAddress}/metrics` }, 'serving Prometheus metrics');
}

/** The workflow bundle's path (WORKFLOW_BUNDLE_PATH, or the one `npm run build` writes); it must exist. */
function requireWorkflowBundle(config: Config): string {
  const bundlePath = config.workflowBundlePath ?? path.resolve(__dirname, '..', 'workflow-bundle.js');
  if (!fs.existsSync(bundlePath)) {
    throw new Error(`workflow bundle ${bundlePath} is missing: run \`npm run build\` first`);
  }
  return bundlePath;
}

/** A cluster still coming up is waited for; a namespace that never comes (a wrong TEMPORAL_NAMESPACE) ends the worker. */
async function registerSearchAttributes(connection: NativeConnection, config: Config, logger: Logger): Promise<void> {
  const added = await ensureSearchAttributes(connection, config.temporal.namespace, {
    log: (l) => logger.warn(l),
    giveUpMs: 10 * 60_000,
  });
  if (added.length > 0) logger.info({ added }, 'registered search attributes');
}

/**
 * Runtime.install registers SIGINT/SIGTERM handlers that call worker.shutdown(); run() then resolves.
 * Only a running worker is asked: one already draining (a SIGTERM came first) would throw IllegalStateError.
 */
function drainWithParent(worker: HostWorker): void {
  exitWithParent(() => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  });
}

async function main(): Promise<void> {
  const config = loadConfig();
  const { mongoUri, temporalAddress } = requireServers(config);
  const secretsKey = requireSecretsKey(config);
  const logger = createLogger(config, 'worker');
  warnAboutProcessIsolation(config, logger);
  warnAboutCgroups(config, logger);
  const tracing = installTracing(config.tracing, 'agent-control-worker');
  installRuntime(config, logger);
  const bundlePath = requireWorkflowBundle(config);
  const database = openDatabase(mongoUri, config.mongo.db, {
    serverSelectionTimeoutMs: config.mongo.serverSelectionTimeoutMs,
    appName: 'agent-control-worker',
  });
  const connection = await connectWithRetry(temporalAddress, (m) => logger.warn(m));
  await registerSearchAttributes(connection, config, logger);

  const clientConnection = boundedConnection(temporalAddress);
  const worker = await createWorker({
    connection,
    client: new Client({ connection: clientConnection, namespace: config.temporal.namespace }),
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    db: database.db,
    workflowBundlePath: bundlePath,
    config,
    secretsKey,
    tracing,
    shutdownGraceMs: config.shutdownGraceMs,
  });
  drainWithParent(worker);
  beatWhileAlive(workerHeartbeatFile(config.dataDir));
  logger.info(
    { taskQueue: config.temporal.taskQueue, hostTaskQueue: worker.hostQueue, namespace: config.temporal.namespace },
    'worker polling',
  );
  await worker.run();
  await connection.close();
  await clientConnection.close();
  await tracing.shutdown();
  await database.close();
  logger.info('worker stopped');
  // Everything is closed: what may still hold the event loop (a name lookup of a sandbox just deleted,
  // which an engine's DNS answers only after seconds) has nobody waiting for it.
  process.exit(0);
}

main().catch((e: Error) => {
  console.error(e instanceof ConfigError ? e.message : e);
  process.exit(1);
});
