/**
 * The role the service logs in to the embedded PostgreSQL with, made and kept right by the superuser on
 * every start. The superuser never runs anything the service role could have shaped: the role's DDL is
 * done from the `postgres` database (which the role cannot enter), and the one-time hand-over of what an
 * earlier version made as the superuser runs with `search_path` pinned to pg_catalog (an operator or
 * function the role planted in its own schemas is never picked), in one transaction, then never again.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';

export interface ServiceRoleSetup {
  /** The superuser's URL of the `postgres` database, and of the service's database. */
  superuserUrl: (database: string) => string;
  superuser: string;
  role: string;
  database: string;
  passwordFile: string;
  /** Written once the hand-over is done: later starts skip it. */
  handedOverFile: string;
}

/** The role's password: made once (the first writer wins, whoever races it), never empty. */
export function servicePassword(file: string): string {
  if (!fs.existsSync(file)) {
    const scratch = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}`;
    fs.writeFileSync(scratch, crypto.randomBytes(24).toString('base64url') + '\n', { mode: 0o600 });
    try {
      fs.linkSync(scratch, file); // fails if another start made it first: theirs is the one
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      fs.rmSync(scratch, { force: true });
    }
  }
  const password = fs.readFileSync(file, 'utf8').trim();
  if (password.length < 16)
    throw new Error(`${file} holds no usable password (remove it: the next start makes a new one)`);
  return password;
}

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802, 4096 rounds), so the clear
 * password is never in a statement (a failed statement is written to the server's log).
 */
export function scramVerifier(password: string, salt = crypto.randomBytes(16), iterations = 4096): string {
  const salted = crypto.pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const hmac = (key: Buffer, text: string) => crypto.createHmac('sha256', key).update(text).digest();
  const storedKey = crypto.createHash('sha256').update(hmac(salted, 'Client Key')).digest();
  const serverKey = hmac(salted, 'Server Key');
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

async function connected<T>(url: string, use: (c: Client) => Promise<T>, options?: string): Promise<T> {
  const client = new Client({
    connectionString: url,
    connectionTimeoutMillis: 10_000,
    query_timeout: 60_000,
    ...(options ? { options } : {}),
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The role: login, no superuser, CREATEDB, CREATEROLE, replication or BYPASSRLS, no role memberships,
 * no settings of its own; its databases owned by it, open to its connections (a limit it set on itself is
 * lifted), without settings of its own, closed to PUBLIC; `postgres` and template1 closed to PUBLIC too.
 */
async function ensureRole(
  c: Client,
  s: Pick<ServiceRoleSetup, 'role'>,
  databases: readonly string[],
  password: string,
  connectionLimit = -1,
): Promise<void> {
  const role = c.escapeIdentifier(s.role);
  const attributes = `LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT CONNECTION LIMIT ${Math.trunc(connectionLimit)} VALID UNTIL 'infinity' PASSWORD ${c.escapeLiteral(scramVerifier(password))}`;
  try {
    await c.query(`CREATE ROLE ${role} ${attributes}`);
  } catch (e) {
    if ((e as { code?: string }).code !== '42710') throw e; // it exists (made earlier, or by a start racing this one)
    await c.query(`ALTER ROLE ${role} ${attributes}`);
  }
  await c.query(`ALTER ROLE ${role} RESET ALL`);
  const memberships = await c.query<{ rolname: string }>(
    'SELECT r.rolname FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles r ON r.oid = m.roleid WHERE m.member = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $1)',
    [s.role],
  );
  for (const { rolname } of memberships.rows) await c.query(`REVOKE ${c.escapeIdentifier(rolname)} FROM ${role}`);
  for (const name of databases) {
    const database = c.escapeIdentifier(name);
    await c.query(`ALTER DATABASE ${database} OWNER TO ${role}`);
    await c.query(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS true CONNECTION LIMIT -1 IS_TEMPLATE false`);
    await c.query(`ALTER DATABASE ${database} RESET ALL`);
    // Its owner's only: another role of the same server (the Temporal server's, the service's) may not enter it.
    await c.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${database} FROM PUBLIC`);
  }
  for (const other of ['postgres', 'template1'])
    await c.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${other} FROM PUBLIC`);
}

/** Relation kinds, with the word ALTER takes for each (indexes and a column's own sequence follow their table). */
const RELATION_KINDS: Record<string, string> = {
  r: 'TABLE',
  p: 'TABLE',
  S: 'SEQUENCE',
  v: 'VIEW',
  m: 'MATERIALIZED VIEW',
  f: 'FOREIGN TABLE',
};
const NOT_SYSTEM = (column: string) =>
  `${column} OPERATOR(pg_catalog.!~~) 'pg\\_%' AND ${column} OPERATOR(pg_catalog.<>) 'information_schema'`;

/**
 * What the superuser owns in the service's database outside the system schemas (what an earlier version
 * made as the superuser: FerretDB's schemas and tables), handed over to the role: schemas, relations,
 * routines and types. With search_path pinned and every operator qualified, in one transaction.
 */
async function handOver(c: Client, s: ServiceRoleSetup): Promise<number> {
  const role = c.escapeIdentifier(s.role);
  const su = `(SELECT oid FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) $1)`;
  const statements: string[] = [];
  await c.query('BEGIN');
  try {
    const schemas = await c.query<{ nspname: string }>(
      `SELECT nspname FROM pg_catalog.pg_namespace WHERE nspowner OPERATOR(pg_catalog.=) ${su} AND ${NOT_SYSTEM('nspname')}`,
      [s.superuser],
    );
    for (const { nspname } of schemas.rows)
      statements.push(`ALTER SCHEMA ${c.escapeIdentifier(nspname)} OWNER TO ${role}`);
    const relations = await c.query<{ nspname: string; relname: string; relkind: string }>(
      `SELECT n.nspname, c.relname, c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
        WHERE c.relowner OPERATOR(pg_catalog.=) ${su} AND c.relkind OPERATOR(pg_catalog.=) ANY($2::"char"[]) AND ${NOT_SYSTEM('n.nspname')}
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.objid OPERATOR(pg_catalog.=) c.oid AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND d.deptype OPERATOR(pg_catalog.=) ANY('{a,i}'::"char"[]) AND c.relkind OPERATOR(pg_catalog.=) 'S')
        ORDER BY n.nspname, c.relname`,
      [s.superuser, Object.keys(RELATION_KINDS)],
    );
    for (const r of relations.rows)
      statements.push(
        `ALTER ${RELATION_KINDS[r.relkind]} ${c.escapeIdentifier(r.nspname)}.${c.escapeIdentifier(r.relname)} OWNER TO ${role}`,
      );
    const routines = await c.query<{ signature: string }>(
      `SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text AS signature FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
        WHERE p.proowner OPERATOR(pg_catalog.=) ${su} AND ${NOT_SYSTEM('n.nspname')}`,
      [s.superuser],
    );
    for (const { signature } of routines.rows) statements.push(`ALTER ROUTINE ${signature} OWNER TO ${role}`);
    const types = await c.query<{ name: string; typtype: string }>(
      `SELECT t.oid::pg_catalog.regtype::pg_catalog.text AS name, t.typtype FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) t.typnamespace
        WHERE t.typowner OPERATOR(pg_catalog.=) ${su} AND t.typtype OPERATOR(pg_catalog.=) ANY('{e,d,r}'::"char"[]) AND ${NOT_SYSTEM('n.nspname')}`,
      [s.superuser],
    );
    for (const t of types.rows)
      statements.push(`ALTER ${t.typtype === 'd' ? 'DOMAIN' : 'TYPE'} ${t.name} OWNER TO ${role}`);
    for (const sql of statements) await c.query(sql);
    await c.query('COMMIT');
    return statements.length;
  } catch (e) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/**
 * Makes or brings the service's role up to date (each start), and hands over what an earlier version
 * made as the superuser (once). Answers how many objects were handed over this time.
 */
export async function ensureServiceRole(s: ServiceRoleSetup): Promise<number> {
  const password = servicePassword(s.passwordFile);
  await connected(s.superuserUrl('postgres'), (c) => ensureRole(c, s, [s.database], password));
  if (fs.existsSync(s.handedOverFile)) return 0;
  const handed = await connected(
    s.superuserUrl(s.database),
    (c) => handOver(c, s),
    '-c search_path=pg_catalog,pg_temp',
  );
  fs.writeFileSync(s.handedOverFile, `handed over to ${s.role}\n`, { mode: 0o600 });
  return handed;
}

export const handedOverFile = (dir: string) => path.join(dir, 'service-role-handed-over');

/**
 * A role of its own for another server on the same PostgreSQL (the Temporal server): made or brought up to
 * date like the service's, owning `databases` (made here when missing) and nothing else. Answers its password.
 */
export async function ensureDatabasesRole(s: {
  superuserUrl: (database: string) => string;
  role: string;
  databases: readonly string[];
  passwordFile: string;
  /** Its connections at most, so that it cannot take every slot of the server from the service's role. */
  connectionLimit: number;
}): Promise<string> {
  const password = servicePassword(s.passwordFile);
  await connected(s.superuserUrl('postgres'), async (c) => {
    for (const name of s.databases) {
      const exists = await c.query('SELECT 1 FROM pg_catalog.pg_database WHERE datname OPERATOR(pg_catalog.=) $1', [
        name,
      ]);
      if (exists.rowCount) continue;
      await c.query(`CREATE DATABASE ${c.escapeIdentifier(name)}`).catch((e: { code?: string }) => {
        if (e.code !== '42P04') throw e; // made meanwhile by a start racing this one
      });
    }
    await ensureRole(c, s, s.databases, password, s.connectionLimit);
  });
  return password;
}
