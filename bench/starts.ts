/**
 * Start benchmark (on demand, never part of the tests):
 * `npm run bench:starts [-- --starts 200 --single 15 --follow workflow|record --runtime built-in|openhands --workers 1]`.
 *
 * --workers runs that many worker processes, each as a host of its own (WORKER_HOST, DATA_DIR, its
 * runtimes on 127.0.0.<2 + i>, an address the others reach): the sandbox lives on one of them, whose
 * host queue takes its calls; the start-task workflows and their steps spread over all.
 *
 * --runtime picks the sandbox's agent server: the built-in runtime, or the real OpenHands agent server
 * (installed first when missing, as `npm start` does). The raw steps go through the same runtime client.
 *
 * --follow sets START_STREAM_FOLLOW on the api: stream-start learns each status from the start-task
 * workflow's Update (workflow, the default) or by reading the stored record (record).
 *
 * Starts FerretDB, the Temporal dev server, the api and the workers as processes, and one sandbox that
 * the starts use (no repository: each start makes an empty git workspace), then:
 *   - concurrency: N stream-starts at once, each read to its end: all READY? starts per second, p50/p99
 *     from the request to READY, and the CPU seconds each process used in that phase (bench/cpu.ts);
 *   - one start at a time, alternating with the same steps made raw (the runtime's bash calls the steps
 *     make, the conversation created in the runtime, and the status and record writes with the driver):
 *     the orchestration share of one start (goal <= 20% over the raw steps).
 *
 * Its parts: the command line (starts-options.ts), the set-up (starts-setup.ts), one start each way
 * (starts-runs.ts), the phases (starts-phases.ts), the processes counted (starts-cpu.ts) and the printed
 * report (starts-report.ts).
 */
import { progress, runBench } from './report';
import { startBenchServers } from './servers';
import { waitForReady } from './service-processes';
import { rawStart, streamStart } from './starts-runs';
import { findRuntimes, runtimesBelow, startsCpuScopes } from './starts-cpu';
import { concurrentOutcome, concurrentStarts, singleStarts } from './starts-phases';
import { printStartsReport } from './starts-report';
import { prepareSharedSandbox, startServices } from './starts-setup';
import { SecretBox } from '../src/auth/secret-box';
import { AgentControlClient } from '../src/client';
import { freePort } from '../src/process/net';
import { processTree as treeOf, signalAll } from '../src/process/process-tree';
import { openDatabase } from '../src/store/mongo';

async function main(): Promise<void> {
  const servers = await startBenchServers('starts');
  const secretsKey = SecretBox.generateKey();
  const apiPort = await freePort();
  const base = `http://127.0.0.1:${apiPort}`;
  let runtimePids: number[] = [];
  const children = await startServices(servers, apiPort, secretsKey);
  const database = openDatabase(servers.mongoUri, 'bench');
  try {
    await waitForReady(base);
    const { key, sandbox, runtime } = await prepareSharedSandbox(database.db, base, secretsKey);
    const client = new AgentControlClient({ baseUrl: base, apiKey: key });
    const serviceStart = () => streamStart(client, sandbox.id);
    const rawSteps = () => rawStart(database.db, runtime, sandbox.id);

    progress('warming up');
    for (let i = 0; i < 3; i++) {
      await serviceStart();
      await rawSteps();
    }

    const workerPids = children.slice(1).map((c) => c.pid!);
    runtimePids = findRuntimes(workerPids);
    const scopes = startsCpuScopes(children[0]!.pid!, workerPids, runtimePids, servers);
    const concurrent = await concurrentStarts(scopes, serviceStart);
    const runtimesAfter = runtimesBelow(workerPids);
    if (runtimesAfter.join() !== runtimePids.join())
      progress(`the runtime processes changed during the phase: ${runtimePids.join()} -> ${runtimesAfter.join()}`);
    const { ready, tasksStored } = await concurrentOutcome(concurrent.all, database.db);

    const singles = await singleStarts(serviceStart, rawSteps);
    await printStartsReport({
      temporalName: servers.temporalName,
      temporalAddress: servers.temporalAddress,
      scopes,
      concurrent,
      ready,
      tasksStored,
      singles,
    });
  } finally {
    await database.close();
    await servers.stop(children);
    // The sandbox's runtime outlives the worker (a detached process, as the provider makes it): the
    // OpenHands agent server does not notice its service is gone, so it goes here.
    for (const pid of runtimePids) signalAll(treeOf(pid), 'SIGKILL');
  }
}

runBench(main);
