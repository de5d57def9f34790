/**
 * Moves the data of an earlier `npm start` (FerretDB on SQLite files in DATA_DIR/ferretdb/sqlite) into
 * the PostgreSQL FerretDB now stores into, once, before the api and worker start: every database and
 * collection, document by document, through a FerretDB of its own on the old files. The declared
 * indexes are made again by the api as at every start.
 *
 * The files are first moved aside to DATA_DIR/ferretdb-sqlite-migrating: a move cut short (Ctrl-C, a
 * kill) is done again from the start at the next `npm start` (each collection is emptied before it is
 * copied). Once done, they stay in DATA_DIR/ferretdb-sqlite-migrated-<time> for the operator to delete.
 */
import { MongoClient } from 'mongodb';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../src/process/net';
import { startFerretdb } from './ferretdb-server';

const BATCH = 100;

export interface MigrationLog {
  info(message: string): void;
}

const hasSqliteFiles = (dir: string) => fs.existsSync(dir) && fs.readdirSync(dir).some((f) => f.endsWith('.sqlite'));

/** The SQLite files waiting to be moved into PostgreSQL, if any: a move in progress first. */
export function sqliteFilesToMigrate(dataDir: string): string | undefined {
  const inProgress = path.join(dataDir, 'ferretdb-sqlite-migrating', 'sqlite');
  if (hasSqliteFiles(inProgress)) return inProgress;
  const old = path.join(dataDir, 'ferretdb', 'sqlite');
  return hasSqliteFiles(old) ? old : undefined;
}

export async function migrateSqliteData(o: {
  ferretdbBinary: string;
  dataDir: string;
  targetUri: string;
  log: MigrationLog;
}): Promise<void> {
  const found = sqliteFilesToMigrate(o.dataDir);
  if (!found) return;
  const work = path.join(o.dataDir, 'ferretdb-sqlite-migrating');
  if (found !== path.join(work, 'sqlite')) {
    fs.mkdirSync(work, { recursive: true });
    fs.renameSync(found, path.join(work, 'sqlite'));
  }
  o.log.info(`moving the data of FerretDB's SQLite files (${work}) into PostgreSQL, once`);
  const started = Date.now();
  const source = await startFerretdb({
    binary: o.ferretdbBinary,
    backend: { kind: 'sqlite' },
    dataDir: work,
    port: await freePort(),
  });
  const from = new MongoClient(source.uri);
  const to = new MongoClient(o.targetUri);
  let collections = 0;
  let documents = 0;
  try {
    const { databases } = await from.db('admin').admin().listDatabases({ nameOnly: true });
    for (const { name } of databases) {
      for (const info of await from.db(name).listCollections().toArray()) {
        if (info.type && info.type !== 'collection') continue;
        const target = to.db(name);
        await target
          .collection(info.name)
          .drop()
          .catch(() => undefined); // absent: nothing to drop
        const options = (info as { options?: { capped?: boolean; size?: number; max?: number } }).options;
        await target.createCollection(
          info.name,
          options?.capped ? { capped: true, size: options.size, max: options.max } : {},
        );
        let batch: Record<string, unknown>[] = [];
        for await (const doc of from.db(name).collection(info.name).find({}, { batchSize: BATCH })) {
          batch.push(doc);
          if (batch.length === BATCH) {
            await target.collection(info.name).insertMany(batch, { ordered: true });
            documents += batch.length;
            batch = [];
          }
        }
        if (batch.length > 0) await target.collection(info.name).insertMany(batch, { ordered: true });
        documents += batch.length;
        collections++;
      }
    }
  } finally {
    await Promise.all([from.close(), to.close()]);
    await source.stop();
  }
  const kept = path.join(o.dataDir, `ferretdb-sqlite-migrated-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  fs.renameSync(work, kept);
  o.log.info(
    `moved ${documents} documents in ${collections} collections into PostgreSQL in ${Date.now() - started} ms; the SQLite files are kept in ${kept} (delete them when you no longer need them)`,
  );
}
