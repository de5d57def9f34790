/** Starts FerretDB with its SQLite backend on loopback, telemetry off, data under the given directory. */
import { MongoClient } from 'mongodb';
import fs from 'node:fs';
import path from 'node:path';
import { portOpen } from '../../src/process/net';
import { startChild, type Child } from './child';

export interface FerretdbOptions {
  binary: string;
  dataDir: string;
  port: number;
  pidFile?: boolean;
  onSpawn?: (child: Child) => void;
}

export async function mongoAnswers(uri: string): Promise<boolean> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000 });
  try {
    await client.db('admin').command({ ping: 1 });
    return true;
  } finally {
    await client.close();
  }
}

export async function startFerretdb(o: FerretdbOptions): Promise<Child & { uri: string }> {
  const uri = `mongodb://127.0.0.1:${o.port}/`;
  const sqliteDir = path.join(o.dataDir, 'sqlite');
  fs.mkdirSync(sqliteDir, { recursive: true });
  const child = await startChild({
    name: 'ferretdb',
    command: o.binary,
    args: [
      '--handler=sqlite',
      `--sqlite-url=file:${sqliteDir}/`,
      `--listen-addr=127.0.0.1:${o.port}`,
      `--state-dir=${o.dataDir}`,
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=warn',
      '--log-format=text',
    ],
    env: { ...process.env, DO_NOT_TRACK: '1' },
    cwd: o.dataDir,
    logFile: path.join(o.dataDir, 'ferretdb.log'),
    pidFile: o.pidFile ? path.join(o.dataDir, 'ferretdb.pid') : undefined,
    onSpawn: o.onSpawn,
    readyTimeoutMs: 30_000,
    ready: async () => (await portOpen(o.port)) && (await mongoAnswers(uri)),
  });
  return Object.assign(child, { uri });
}
