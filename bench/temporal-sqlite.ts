/**
 * The Temporal dev server's SQLite settings (on demand): `npm run bench:temporal-sqlite [-- --workflows 300
 * --concurrency 20]`. For each setting, a dev server of its own in a temporary directory; N workflows
 * started (no worker: each start is the server's own write of an execution, its history and a task) and
 * then terminated, C at a time; then the server is killed with -9 and started again on the same file,
 * and every workflow must still be there, terminated. Prints workflows per second and CPU seconds of the
 * server per setting. Nothing of the project runs: this is Temporal's persistence alone.
 */
import { Client, Connection } from '@temporalio/client';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { obtainServers } from '../scripts/servers/obtain';
import { startTemporalDevServer } from '../scripts/servers/temporal-dev-server';
import { freePort } from '../src/process/net';
import { runBench } from './report';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const WORKFLOWS = arg('workflows', 300);
const CONCURRENCY = arg('concurrency', 20);

const SETTINGS: [label: string, pragmas: Record<string, string>][] = [
  ["SQLite's defaults (journal_mode=delete, synchronous=full)", {}],
  ['journal_mode=wal, synchronous=full', { journal_mode: 'wal', synchronous: 'full' }],
  ['journal_mode=wal, synchronous=normal (npm start)', { journal_mode: 'wal', synchronous: 'normal' }],
];

/** User and system CPU seconds of a process so far (Linux: /proc, clock ticks of 1/100 s). */
const cpuSeconds = (pid: number) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function measure(label: string, pragmas: Record<string, string>): Promise<string[]> {
  const binaries = await obtainServers(process.env.SERVERS_CACHE_DIR, (l) => console.error(l));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-control-bench-temporal-'));
  const options = {
    binary: binaries.temporal,
    dataDir: dir,
    port: await freePort(),
    uiPort: await freePort(),
    namespace: 'default',
    sqlitePragmas: pragmas,
  };
  let server = await startTemporalDevServer(options);
  try {
    const connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection });
    const ids = Array.from({ length: WORKFLOWS }, (_, i) => `bench-${i}`);
    const cpu0 = cpuSeconds(server.process.pid!);
    const t0 = performance.now();
    await pool(ids, CONCURRENCY, async (id) => {
      const handle = await client.workflow.start('NoSuchWorkflow', { workflowId: id, taskQueue: 'bench-no-worker' });
      await handle.terminate('bench');
    });
    const ms = performance.now() - t0;
    const cpu = cpuSeconds(server.process.pid!) - cpu0;
    await connection.close();

    // Durability: kill -9, start again on the same file, every workflow is there and terminated.
    process.kill(server.process.pid!, 'SIGKILL');
    await server.exited;
    server = await startTemporalDevServer(options);
    const again = await Connection.connect({ address: server.address });
    let found = 0;
    for (const id of ids) {
      const d = await new Client({ connection: again }).workflow.getHandle(id).describe();
      if (d.status.name === 'TERMINATED') found++;
    }
    await again.close();
    if (found !== WORKFLOWS) throw new Error(`${label}: ${WORKFLOWS - found} workflows lost across a kill -9`);
    return [
      label,
      `${((WORKFLOWS / ms) * 1000).toFixed(0)} wf/s`,
      `${((cpu / WORKFLOWS) * 1000).toFixed(1)} ms`,
      `${found}/${WORKFLOWS}`,
    ];
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  for (const [label, pragmas] of SETTINGS) {
    console.error(`[bench] ${label}`);
    rows.push(await measure(label, pragmas));
  }
  const header = [
    'setting',
    `start + terminate, ${CONCURRENCY} at a time`,
    'server CPU per workflow',
    'kept after kill -9',
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
  console.log(
    `\n${WORKFLOWS} workflows per setting, Temporal CLI dev server, Node ${process.version}, ${os.cpus().length} cores`,
  );
}

runBench(main);
