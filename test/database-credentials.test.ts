/**
 * Issue 17: the embedded database takes no client without its credentials. FerretDB on PostgreSQL logs
 * in to PostgreSQL as each client (MongoDB's PLAIN mechanism) and is started with a PostgreSQL URL
 * that carries no user and no password, so a client without the credentials is refused every command
 * that reads or writes; PostgreSQL asks every connection for a password. `npm start` gives the api and
 * the worker a URI with the credentials, keeps them in files only its user reads, prints no password,
 * and listens on loopback only. Real servers throughout.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Long, MongoClient, type Document } from 'mongodb';
import { Client } from 'pg';
import { startDocumentStore, type DocumentStore } from '../scripts/servers/document-store';
import { ferretdbUri, redactUri, splitPostgresCredentials, startFerretdb } from '../scripts/servers/ferretdb-server';
import { POSTGRES_SERVICE_ROLE } from '../scripts/servers/postgres-server';
import { embeddedServersFile } from '../src/cli/embedded-servers';
import { freePort } from '../src/process/net';
import { testEnv, uniqueName } from './helpers/env';
import { freeLauncherPorts, Launcher } from './helpers/launcher';

/** What PostgreSQL answers FerretDB when a client gave no credentials or wrong ones. */
const POSTGRES_REFUSED = /failed SASL auth: FATAL: password authentication failed for user "[^"]+" \(SQLSTATE 28P01\)/;

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

/** Every process under `root` (itself included), from /proc. */
function processTree(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/** /proc/net/tcp{,6}'s hex address (32-bit words in host order, little-endian here) as text. */
function procAddress(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((w) => Buffer.from(w, 'hex').reverse());
  if (words.length === 1) return [...words[0]!].join('.');
  const hex6 = Buffer.concat(words).toString('hex');
  if (hex6 === '0'.repeat(31) + '1') return '::1';
  if (hex6 === '0'.repeat(32)) return '::';
  if (hex6.startsWith('0'.repeat(20) + 'ffff')) return `::ffff:${[...Buffer.from(hex6.slice(24), 'hex')].join('.')}`;
  return hex6.match(/.{4}/g)!.join(':');
}

/** The TCP sockets the given processes listen on, as `address:port` with the program that listens. */
function listeningSockets(pids: number[]): { address: string; program: string }[] {
  const inodes = new Map<string, string>();
  for (const pid of pids) {
    let program: string;
    try {
      program = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      continue; // gone meanwhile
    }
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone meanwhile
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.set(m[1]!, program);
      } catch {
        // closed meanwhile
      }
    }
  }
  const listening: { address: string; program: string }[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      const [address, port] = f[1]!.split(':');
      const program = inodes.get(f[9]!);
      if (f[3] === '0A' && program)
        listening.push({ address: `${procAddress(address!)}:${parseInt(port!, 16)}`, program });
    }
  }
  return listening;
}

const environOf = (pid: number) =>
  Object.fromEntries(
    fs
      .readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );

describe("FerretDB's PostgreSQL URL and its clients' MongoDB URI", () => {
  it('moves the user and password (in the URL or its query) to the MongoDB URI, keeps the rest', () => {
    const split = splitPostgresCredentials(
      'postgres://agent_control:p%40ss%2Fw%3Ard@127.0.0.1:27432/ferretdb?sslmode=disable',
    );
    expect(split).toEqual({
      serverUrl: 'postgres://127.0.0.1:27432/ferretdb?sslmode=disable',
      credentials: { username: 'agent_control', password: 'p@ss/w:rd' },
    });
    expect(splitPostgresCredentials('postgres://db.example:5432/ferretdb?user=u&password=pw&sslmode=require')).toEqual({
      serverUrl: 'postgres://db.example:5432/ferretdb?sslmode=require',
      credentials: { username: 'u', password: 'pw' },
    });
    // No password to move: the URL as given (that server decides whom it lets in).
    expect(splitPostgresCredentials('postgres://u@127.0.0.1:5432/ferretdb')).toEqual({
      serverUrl: 'postgres://u@127.0.0.1:5432/ferretdb',
    });
    const uri = ferretdbUri(27017, split.credentials);
    expect(uri).toBe('mongodb://agent_control:p%40ss%2Fw%3Ard@127.0.0.1:27017/?authMechanism=PLAIN');
    expect(redactUri(uri)).toBe('mongodb://agent_control:***@127.0.0.1:27017/?authMechanism=PLAIN');
    expect(ferretdbUri(27017)).toBe('mongodb://127.0.0.1:27017/');
    expect(redactUri('mongodb://127.0.0.1:27017/')).toBe('mongodb://127.0.0.1:27017/');
  });
});

describe('the embedded FerretDB on PostgreSQL takes no client without the credentials', () => {
  let own: DocumentStore | undefined;
  let ferret: Awaited<ReturnType<typeof startFerretdb>>;
  let postgresUrl: string;
  let password: string;
  let port: number;
  let owner: MongoClient;
  const dbName = uniqueName('secrets');
  const marker = `SECRET_${randomBytes(6).toString('hex')}`;
  const clients: MongoClient[] = [];
  const client = (uri: string) => {
    const c = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    const env = testEnv();
    if (!env.postgresUrl)
      own = await startDocumentStore({
        ferretdbBinary: env.binaries.ferretdb,
        dir: path.join(env.dir, uniqueName('credentials-store')),
        durable: false,
      });
    postgresUrl = env.postgresUrl ?? own!.postgresUrl!;
    password = decodeURIComponent(new URL(postgresUrl).password);
    port = await freePort();
    // A FerretDB of this file's own on the shared PostgreSQL, started from an environment that names the
    // user and the password (as a shell with PGUSER and PGPASSWORD exported does): pgx would log in an
    // anonymous client with them, so FerretDB must not see them.
    const saved = { PGUSER: process.env.PGUSER, PGPASSWORD: process.env.PGPASSWORD };
    process.env.PGUSER = decodeURIComponent(new URL(postgresUrl).username);
    process.env.PGPASSWORD = password;
    try {
      ferret = await startFerretdb({
        binary: env.binaries.ferretdb,
        backend: { kind: 'postgresql', url: postgresUrl },
        dataDir: path.join(env.dir, uniqueName('credentials-ferretdb')),
        port,
      });
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    owner = client(ferret.uri);
    await owner
      .db(dbName)
      .collection('secrets')
      .insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: `k${i}` as never, secret: `${marker}_${i}` })));
  }, 120_000);

  afterAll(async () => {
    await owner?.db(dbName).dropDatabase();
    await Promise.all(clients.map((c) => c.close()));
    await ferret?.stop();
    await own?.stop();
  });

  const anonymousUri = () => `mongodb://127.0.0.1:${port}/`;

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

describe('npm start: the credentials go to the api and the worker, nowhere else; everything on loopback', () => {
  const dataDir = path.join(testEnv().dir, 'credentials-launcher-data');
  let launcher: Launcher;
  afterAll(() => launcher?.killAll());

  it('gives the api and the worker a URI with the credentials, keeps them in 0600 files, prints no password, listens on loopback only', async () => {
    launcher = new Launcher(dataDir, await freeLauncherPorts());
    const l = launcher.launch();
    await launcher.waitUp(l);
    const { ports } = launcher;
    const password = fs.readFileSync(path.join(dataDir, 'postgres', 'service-password'), 'utf8').trim();
    const superuserPassword = fs.readFileSync(path.join(dataDir, 'postgres', 'password'), 'utf8').trim();
    expect(password.length).toBeGreaterThanOrEqual(32);
    expect(superuserPassword).not.toBe(password);

    // The file the admin CLI reads: the URI with the credentials, readable by this user only.
    const file = embeddedServersFile(dataDir);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dataDir, 'postgres', 'password')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dataDir, 'postgres', 'service-password')).mode & 0o777).toBe(0o600);
    const { mongoUri } = JSON.parse(fs.readFileSync(file, 'utf8')) as { mongoUri: string };
    expect(mongoUri).toBe(
      `mongodb://${POSTGRES_SERVICE_ROLE}:${encodeURIComponent(password)}@127.0.0.1:${ports.mongo}/?authMechanism=PLAIN`,
    );

    // What the api and the worker were started with.
    const api = environOf(launcher.pidOf('api')!);
    const worker = environOf(launcher.pidOf('worker')!);
    expect(api.MONGODB_URI).toBe(mongoUri);
    expect(worker.MONGODB_URI).toBe(mongoUri);
    expect(worker.POSTGRES_URL).toBe('');
    expect(environOf(launcher.pidOf('ferretdb')!).FERRETDB_POSTGRESQL_URL).toBe(
      `postgres://127.0.0.1:${ports.postgres}/ferretdb?sslmode=disable&plan_cache_mode=force_custom_plan`,
    );

    // The launcher's FerretDB: anonymous refused, the credentials taken.
    const anonymous = new MongoClient(`mongodb://127.0.0.1:${ports.mongo}/`, { serverSelectionTimeoutMS: 5000 });
    const service = new MongoClient(mongoUri, { serverSelectionTimeoutMS: 5000 });
    try {
      await expect(anonymous.db('agent_control').collection('users').findOne({})).rejects.toThrow(POSTGRES_REFUSED);
      expect(await service.db('agent_control').collection('users').findOne({ email: 'admin@localhost' })).toMatchObject(
        { email: 'admin@localhost' },
      );
    } finally {
      await Promise.all([anonymous.close(), service.close()]);
    }

    // The password is printed nowhere, and kept only in the two files that hold it.
    expect(l.output()).toContain(
      `MongoDB      mongodb://${POSTGRES_SERVICE_ROLE}:***@127.0.0.1:${ports.mongo}/?authMechanism=PLAIN`,
    );
    expect(l.output()).not.toContain(password);
    // The superuser's is in its own file only: the service never has it.
    const holding = (secret: string) => {
      const found: string[] = [];
      const walk = (dir: string) => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
          const p = path.join(dir, entry.name);
          if (entry.isDirectory()) walk(p);
          else if (entry.isFile() && fs.readFileSync(p).includes(secret)) found.push(path.relative(dataDir, p));
        }
      };
      walk(dataDir);
      return found.sort();
    };
    expect(holding(password)).toEqual(['embedded-servers.json', path.join('postgres', 'service-password')]);
    expect(holding(superuserPassword)).toEqual([path.join('postgres', 'password')]);
    for (const pid of [launcher.pidOf('api')!, launcher.pidOf('worker')!])
      expect(JSON.stringify(environOf(pid))).not.toContain(superuserPassword);

    // Every TCP socket the launcher's processes listen on is a loopback address.
    const listening = listeningSockets(processTree(l.child.pid!));
    console.log(
      `the launcher's processes listen on: ${listening.map((s) => `${s.address} (${s.program})`).join(', ')}`,
    );
    for (const p of [ports.api, ports.mongo, ports.postgres, ports.temporal, ports.ui])
      expect(listening.map((s) => s.address)).toContain(`127.0.0.1:${p}`);
    expect(listening.filter((s) => !/^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1):\d+$/.test(s.address))).toEqual([]);

    l.child.kill('SIGINT');
    expect(await l.exited).toBe(0);
  }, 180_000);
});
