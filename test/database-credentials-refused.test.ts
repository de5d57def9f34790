/**
 * Issue 17: wrong credentials are refused. A FerretDB of this file's own on PostgreSQL
 * (test/helpers/credentials-ferretdb.ts): a wrong password, a user PostgreSQL does not know, MongoDB's
 * default mechanism, all refused; FerretDB 1.24's known limits with cursors; PostgreSQL asks every
 * connection for a password. An anonymous client: database-credentials-anonymous.test.ts. Real servers
 * throughout.
 */
import net from 'node:net';
import { Long, MongoClient } from 'mongodb';
import { Client } from 'pg';
import { POSTGRES_SERVICE_ROLE } from '../scripts/servers/postgres-server';
import {
  POSTGRES_REFUSED,
  useCredentialsFerretdb,
  anonymousUri,
  client,
  clients,
  dbName,
  ferret,
  owner,
  password,
  port,
  postgresUrl,
} from './helpers/credentials-ferretdb';

/** The first answer of PostgreSQL to a startup message: an authentication request ('R') or an error ('E'). */
function postgresStartup(port: number, user: string): Promise<{ type: string; code?: number; body: string }> {
  const params = Buffer.from(`user\0${user}\0database\0ferretdb\0\0`);
  const message = Buffer.alloc(8 + params.length);
  message.writeInt32BE(message.length, 0);
  message.writeInt32BE(196_608, 4); // protocol 3.0
  params.copy(message, 8);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(message));
    let got = Buffer.alloc(0);
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer in 5 s')));
    socket.on('error', reject);
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length < 5 || got.length < 1 + got.readInt32BE(1)) return;
      const type = String.fromCharCode(got[0]!);
      const body = got.subarray(5, 1 + got.readInt32BE(1));
      socket.destroy();
      resolve(
        type === 'R'
          ? { type, code: body.readInt32BE(0), body: body.subarray(4).toString('latin1') }
          : { type, body: body.toString('latin1') },
      );
    });
  });
}

describe('the embedded FerretDB on PostgreSQL takes no client without the credentials', () => {
  useCredentialsFerretdb();

  it("known limits of FerretDB 1.24 (README): a refused drop still closes others' cursors; a wrong password can continue its user's cursor", async () => {
    const ownerSingle = new MongoClient(ferret.uri, { maxPoolSize: 1 });
    clients.push(ownerSingle);
    const openCursor = async () =>
      Long.fromValue((await ownerSingle.db(dbName).command({ find: 'secrets', batchSize: 2 })).cursor.id as number);
    const getMore = (c: MongoClient, id: Long) =>
      c.db(dbName).command({ getMore: id, collection: 'secrets', batchSize: 2 });

    // FerretDB closes the cursors of a collection before it tries to drop it, whoever asks
    // (internal/handler/msg_drop.go, msg_dropdatabase.go): the anonymous drop is refused, the cursor is gone.
    let id = await openCursor();
    await expect(client(anonymousUri()).db(dbName).command({ drop: 'secrets' })).rejects.toThrow(POSTGRES_REFUSED);
    await expect(getMore(ownerSingle, id)).rejects.toThrow(`cursor id ${id.toString()} not found`);

    // PLAIN credentials are checked when FerretDB logs in to PostgreSQL, and a cursor belongs to a user
    // name (msg_getmore.go): a client that gives the right user and a wrong password is refused every
    // command that reaches PostgreSQL, yet reads the rest of an open cursor of that user whose id it has.
    // Cursor ids are consecutive from a random 32-bit start: not guessable from outside, as the
    // credentials cannot open a cursor of their own.
    id = await openCursor();
    const wrong = client(`mongodb://${POSTGRES_SERVICE_ROLE}:wrong-password@127.0.0.1:${port}/?authMechanism=PLAIN`);
    await expect(wrong.db(dbName).collection('secrets').find({}).toArray()).rejects.toThrow(POSTGRES_REFUSED);
    const leaked = await getMore(wrong, id);
    expect((leaked.cursor as { nextBatch: unknown[] }).nextBatch).toHaveLength(2);
  });

  it('a wrong password, or a user PostgreSQL does not know, is refused', async () => {
    const user = encodeURIComponent(POSTGRES_SERVICE_ROLE);
    for (const uri of [
      `mongodb://${user}:wrong-password@127.0.0.1:${port}/?authMechanism=PLAIN`,
      `mongodb://${user}:@127.0.0.1:${port}/?authMechanism=PLAIN`,
      `mongodb://nobody:${encodeURIComponent(password)}@127.0.0.1:${port}/?authMechanism=PLAIN`,
    ]) {
      const c = client(uri);
      await expect(c.db('admin').admin().listDatabases()).rejects.toThrow(POSTGRES_REFUSED);
      await expect(c.db(dbName).collection('secrets').find({}).toArray()).rejects.toThrow(POSTGRES_REFUSED);
      await expect(c.db(dbName).collection('secrets').insertOne({ by: 'wrong' })).rejects.toThrow(POSTGRES_REFUSED);
    }
    // MongoDB's default mechanism (SCRAM) is not FerretDB's on PostgreSQL: a clear refusal, not a login.
    await expect(
      client(ferret.uri.replace('?authMechanism=PLAIN', '')).db('admin').admin().listDatabases(),
    ).rejects.toThrow(/Unsupported authentication mechanism "SCRAM-SHA-1"/);
    expect(await owner.db(dbName).collection('secrets').countDocuments()).toBe(10);
  });

  it('PostgreSQL asks every connection for a password (SCRAM), and refuses a wrong one', async () => {
    const pgPort = Number(new URL(postgresUrl).port);
    for (const user of [POSTGRES_SERVICE_ROLE, 'agent_control', 'postgres', 'root', 'nobody']) {
      const answer = await postgresStartup(pgPort, user);
      // AuthenticationSASL (10) naming SCRAM-SHA-256: not AuthenticationOk (0), not a cleartext password (3).
      expect([user, answer.type, answer.code, answer.body.split('\0').filter(Boolean)]).toEqual([
        user,
        'R',
        10,
        ['SCRAM-SHA-256'],
      ]);
    }
    const wrong = new URL(postgresUrl);
    wrong.password = 'wrong-password';
    const pg = new Client({ connectionString: wrong.toString(), connectionTimeoutMillis: 5000 });
    pg.on('error', () => undefined);
    await expect(pg.connect()).rejects.toMatchObject({
      code: '28P01',
      message: `password authentication failed for user "${POSTGRES_SERVICE_ROLE}"`,
    });
    await pg.end().catch(() => undefined);
  });
});
