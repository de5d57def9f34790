/**
 * Sandbox start benchmark (on demand, never part of the tests): `npm run bench:sandboxes [-- --runs 20 --limits on]`.
 *
 * Starts FerretDB, the Temporal dev server, the api and the worker as separate processes in a temporary
 * directory, then measures, alternating the two so drift hits both alike:
 *   - direct: spawn the runtime (dist/src/runtime/main.js) and poll its /alive until it answers;
 *   - service: POST /api/v1/sandboxes and poll GET /api/v1/sandboxes?id= until RUNNING
 *     (record, sandbox workflow, provider activity, /alive wait, status write), then DELETE it.
 * Prints median, p90 and min of each and the orchestration share (service / direct - 1).
 *
 * Then, per provider (process, and docker on a Docker engine: the developer's, or one the project runs as
 * root, see scripts/docker/engine.ts; `--docker 0` leaves it out), the lifecycle through the api: start ->
 * RUNNING, pause (POST answered PAUSED), resume (POST answered RUNNING), beside the same work done on the
 * provider's own (a container created and started with the engine API until /alive answers; docker
 * pause; docker unpause until /alive answers).
 *
 * Its parts: the command line (sandboxes-options.ts), the set-up (sandboxes-setup.ts), the timed starts
 * (sandboxes-start-runs.ts) and lifecycles (sandboxes-lifecycle-runs.ts), and the tables
 * (sandboxes-tables.ts).
 */
import { benchCaller } from './bench-caller';
import { runBench } from './report';
import { startBenchServers } from './servers';
import { measureLifecycles } from './sandboxes-lifecycle-runs';
import { measureStarts } from './sandboxes-start-runs';
import { startSandboxServices } from './sandboxes-setup';
import { printLifecycles, printStarts } from './sandboxes-tables';
import { waitForReady } from './service-processes';
import { freePort } from '../src/process/net';
import { openDatabase } from '../src/store/mongo';

async function main(): Promise<void> {
  const servers = await startBenchServers('sandboxes');
  const apiPort = await freePort();
  const { engine, runtimeImage, children } = await startSandboxServices(servers, apiPort);
  const base = `http://127.0.0.1:${apiPort}`;
  const database = openDatabase(servers.mongoUri, 'bench');
  try {
    await waitForReady(base);
    const { key } = await benchCaller(database.db);

    const starts = await measureStarts(servers.dir, base, key);
    await printStarts(starts, servers.temporalAddress);

    printLifecycles(await measureLifecycles(base, key, starts.direct, engine, runtimeImage));
  } finally {
    await database.close();
    await servers.stop(children);
    await engine?.stop();
  }
}

runBench(main);
