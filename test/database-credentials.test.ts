/**
 * Issue 17: where the embedded database's credentials go. FerretDB on PostgreSQL is started with a
 * PostgreSQL URL that carries no user and no password; they move to its clients' MongoDB URI (MongoDB's
 * PLAIN mechanism). `npm start` gives the api and the worker a URI with the credentials, keeps them in
 * files only its user reads, prints no password, and listens on loopback only. What FerretDB refuses a
 * client without them: database-credentials-anonymous.test.ts and database-credentials-refused.test.ts.
 * Real servers throughout.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { ferretdbUri, redactUri, splitPostgresCredentials } from '../scripts/servers/ferretdb-server';
import { POSTGRES_SERVICE_ROLE } from '../scripts/servers/postgres-server';
import { embeddedServersFile } from '../src/cli/embedded-servers';
import { POSTGRES_REFUSED } from './helpers/credentials-ferretdb';
import { testEnv } from './helpers/env';
import { freeLauncherPorts, Launcher } from './helpers/launcher';

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
