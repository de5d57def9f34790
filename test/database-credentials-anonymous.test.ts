/**
 * Issue 17: the embedded database takes no client without its credentials. A FerretDB of this file's own
 * on PostgreSQL (test/helpers/credentials-ferretdb.ts), started with a PostgreSQL URL that carries no user
 * and no password: its URI carries them (MongoDB's PLAIN mechanism) and they read and write; a client
 * without them is refused every command that reads or writes, and every command it can send is refused
 * or touches no data. Wrong credentials: database-credentials-refused.test.ts. Real servers throughout.
 */
import { Long, MongoClient, type Document } from 'mongodb';
import { POSTGRES_SERVICE_ROLE } from '../scripts/servers/postgres-server';
import {
  POSTGRES_REFUSED,
  useCredentialsFerretdb,
  anonymousUri,
  client,
  clients,
  dbName,
  ferret,
  marker,
  owner,
  password,
} from './helpers/credentials-ferretdb';
import { testEnv } from './helpers/env';

/** Commands FerretDB answers without a login to PostgreSQL: none reads or writes a document. */
const ANSWERED_WITHOUT_LOGIN = new Set([
  'hello',
  'isMaster',
  'buildInfo',
  'connectionStatus',
  'getCmdLineOpts',
  'getFreeMonitoringStatus',
  'getLog',
  'getParameter',
  'hostInfo',
  'listCommands',
  'whatsmyuri',
  'currentOp',
  'killCursors', // answers, but finds no cursor of another user (checked below)
  'logout',
]);

/** Commands run against the admin database. */
const ADMIN_COMMANDS = new Set([
  'listDatabases',
  'getLog',
  'getParameter',
  'getCmdLineOpts',
  'hostInfo',
  'serverStatus',
  'buildInfo',
  'setFreeMonitoring',
  'getFreeMonitoringStatus',
  'currentOp',
  'renameCollection',
  'whatsmyuri',
  'connectionStatus',
  'listCommands',
  'ping',
  'hello',
  'isMaster',
]);

describe('the embedded FerretDB on PostgreSQL takes no client without the credentials', () => {
  useCredentialsFerretdb();

  it('its URI carries PostgreSQL user and password, with PLAIN; those credentials read and write', async () => {
    const uri = new URL(ferret.uri);
    expect(decodeURIComponent(uri.username)).toBe(POSTGRES_SERVICE_ROLE);
    expect(decodeURIComponent(uri.password)).toBe(password);
    expect(uri.searchParams.get('authMechanism')).toBe('PLAIN');
    const db = owner.db(dbName);
    expect((await owner.db('admin').admin().listDatabases({ nameOnly: true })).databases.map((d) => d.name)).toContain(
      dbName,
    );
    await db.collection('written').insertOne({ by: 'owner' });
    expect(await db.collection('written').findOne({}, { projection: { _id: 0 } })).toEqual({ by: 'owner' });
    expect(await db.collection('secrets').countDocuments()).toBe(10);

    // The shared servers of the test setup are started the same way.
    const shared = testEnv();
    if (shared.ferretdbBackend === 'postgresql') {
      expect(new URL(shared.mongoUri).password).not.toBe('');
      const sharedUri = new URL(shared.mongoUri);
      await expect(client(`mongodb://${sharedUri.host}/`).db('admin').admin().listDatabases()).rejects.toThrow(
        POSTGRES_REFUSED,
      );
      await expect(
        client(shared.mongoUri).db('admin').admin().listDatabases({ nameOnly: true }),
      ).resolves.toMatchObject({ ok: 1 });
    }
  });

  it('an anonymous client is refused listing the databases, find and insert: PostgreSQL refuses FerretDB its login', async () => {
    const anonymous = client(anonymousUri());
    const db = anonymous.db(dbName);
    // What a client is told (FerretDB's error chain ends with PostgreSQL's reason), e.g.:
    // [msg_listdatabases.go:59 handler.(*Handler).MsgListDatabases] ... failed to connect to `user=root
    // database=ferretdb`: 127.0.0.1:... (127.0.0.1): failed SASL auth: FATAL: password authentication
    // failed for user "root" (SQLSTATE 28P01)
    await expect(anonymous.db('admin').admin().listDatabases()).rejects.toMatchObject({
      code: 1,
      codeName: 'InternalError',
      message: expect.stringMatching(POSTGRES_REFUSED),
    });
    await expect(db.collection('secrets').find({}).toArray()).rejects.toThrow(POSTGRES_REFUSED);
    await expect(db.collection('secrets').findOne({ _id: 'k1' as never })).rejects.toThrow(POSTGRES_REFUSED);
    await expect(db.collection('secrets').insertOne({ by: 'anonymous' })).rejects.toThrow(POSTGRES_REFUSED);
    await expect(db.collection('secrets').updateMany({}, { $set: { secret: 'overwritten' } })).rejects.toThrow(
      POSTGRES_REFUSED,
    );
    await expect(db.collection('secrets').deleteMany({})).rejects.toThrow(POSTGRES_REFUSED);
    await expect(db.collection('secrets').countDocuments()).rejects.toThrow(POSTGRES_REFUSED);
    await expect(db.collection('secrets').aggregate([]).toArray()).rejects.toThrow(POSTGRES_REFUSED);
    await expect(db.listCollections().toArray()).rejects.toThrow(POSTGRES_REFUSED);
    await expect(db.dropDatabase()).rejects.toThrow(POSTGRES_REFUSED);
    expect(
      await owner
        .db(dbName)
        .collection('secrets')
        .countDocuments({ secret: new RegExp(`^${marker}_`) }),
    ).toBe(10);
  });

  it("every command an anonymous client can send is refused, or touches no data; the owner's open cursor stays its own", async () => {
    // The owner leaves a cursor open (one connection: FerretDB's cursors belong to a user).
    const ownerSingle = new MongoClient(ferret.uri, { maxPoolSize: 1 });
    clients.push(ownerSingle);
    const opened = await ownerSingle.db(dbName).command({ find: 'secrets', batchSize: 2 });
    const cursorId = Long.fromValue(opened.cursor.id as number);
    expect(cursorId.isZero()).toBe(false);

    const anonymous = client(anonymousUri());
    const commands = Object.keys(
      ((await anonymous.db('admin').command({ listCommands: 1 })) as { commands: Document }).commands,
    );
    expect(commands).toEqual(
      expect.arrayContaining(['find', 'insert', 'listDatabases', 'getMore', 'aggregate', 'update', 'delete']),
    );
    const args: Record<string, Document> = {
      find: { find: 'secrets' },
      aggregate: { aggregate: 'secrets', pipeline: [], cursor: {} },
      count: { count: 'secrets' },
      distinct: { distinct: 'secrets', key: 'secret' },
      getMore: { getMore: cursorId, collection: 'secrets' },
      killCursors: { killCursors: 'secrets', cursors: [cursorId] },
      insert: { insert: 'secrets', documents: [{ by: 'anonymous' }] },
      update: { update: 'secrets', updates: [{ q: {}, u: { $set: { secret: 'overwritten' } }, multi: true }] },
      delete: { delete: 'secrets', deletes: [{ q: {}, limit: 0 }] },
      findAndModify: { findAndModify: 'secrets', query: {}, update: { $set: { secret: 'overwritten' } } },
      explain: { explain: { find: 'secrets' } },
      getLog: { getLog: 'global' },
      getParameter: { getParameter: '*' },
      collStats: { collStats: 'secrets' },
      dataSize: { dataSize: `${dbName}.secrets` },
      listIndexes: { listIndexes: 'secrets' },
      createIndexes: { createIndexes: 'secrets', indexes: [{ key: { by: 1 }, name: 'by_1' }] },
      dropIndexes: { dropIndexes: 'secrets', index: '*' },
      create: { create: 'made_by_anonymous' },
      drop: { drop: 'secrets' },
      renameCollection: { renameCollection: `${dbName}.secrets`, to: `${dbName}.renamed` },
      validate: { validate: 'secrets' },
      compact: { compact: 'secrets' },
      collMod: { collMod: 'secrets' },
      setFreeMonitoring: { setFreeMonitoring: 1, action: 'enable' },
    };
    const answered: string[] = [];
    const refusals: Record<string, string> = {};
    // The two that close the cursors of what they name before they are refused go last (see the known limits below).
    const closing = ['drop', 'dropDatabase'];
    for (const name of [...commands.filter((n) => !closing.includes(n)), 'owner-getMore', ...closing]) {
      if (name === 'owner-getMore') {
        const more = await ownerSingle.db(dbName).command({ getMore: cursorId, collection: 'secrets', batchSize: 2 });
        expect((more.cursor as { nextBatch: unknown[] }).nextBatch).toHaveLength(2);
        continue;
      }
      try {
        const answer = JSON.stringify(
          await anonymous.db(ADMIN_COMMANDS.has(name) ? 'admin' : dbName).command(args[name] ?? { [name]: 1 }),
        );
        answered.push(name);
        expect([name, answer.includes(marker) || answer.includes(password)]).toEqual([name, false]);
        if (name === 'killCursors')
          expect(JSON.parse(answer)).toMatchObject({ cursorsKilled: [], cursorsNotFound: [cursorId.toNumber()] });
      } catch (e) {
        refusals[name] = (e as Error).message;
      }
    }
    expect(answered.filter((n) => !ANSWERED_WITHOUT_LOGIN.has(n))).toEqual([]);
    // Refused for the login, not for a malformed command: the check means something.
    for (const name of [
      'find',
      'aggregate',
      'count',
      'distinct',
      'insert',
      'update',
      'delete',
      'findAndModify',
      'explain',
      'listDatabases',
      'listCollections',
      'listIndexes',
      'createIndexes',
      'dropIndexes',
      'create',
      'drop',
      'dropDatabase',
      'renameCollection',
      'validate',
      'compact',
      'collStats',
      'dbStats',
      'dataSize',
      'serverStatus',
      'ping',
    ]) {
      expect([name, refusals[name]]).toEqual([name, expect.stringMatching(POSTGRES_REFUSED)]);
    }
    expect(refusals.getMore).toMatch(/^cursor id \d+ not found$/);

    // Nothing changed: the owner's documents and collections are as they were.
    const db = owner.db(dbName);
    expect(
      await db
        .collection('secrets')
        .find({}, { sort: { _id: 1 } })
        .toArray(),
    ).toEqual(Array.from({ length: 10 }, (_, i) => ({ _id: `k${i}`, secret: `${marker}_${i}` })));
    expect((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort()).toEqual([
      'secrets',
      'written',
    ]);
  }, 60_000);
});
