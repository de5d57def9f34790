/**
 * The service logs in to the embedded PostgreSQL as a role of its own, never as the superuser: the role
 * owns FerretDB's database and what is in it, and nothing else. It cannot make databases or roles, run
 * programs on the host (COPY ... PROGRAM), read the server's files, change the server's settings or
 * connect to another database. A cluster an earlier version filled as the superuser is handed over to
 * it on the next start.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import {
  ensureServiceRole,
  FERRETDB_DATABASE,
  POSTGRES_SERVICE_ROLE,
  postgresServicePasswordFile,
  postgresSuperuserUrl,
  requirePostgresBinDir,
  startPostgres,
  type PostgresServer,
} from '../scripts/servers/postgres-server';
import { handedOverFile, scramVerifier } from '../scripts/servers/postgres-service-role';
import { freePort } from '../src/process/net';
import { testEnv, uniqueName } from './helpers/env';

describe("the service's PostgreSQL role", () => {
  let dir: string;
  let port: number;
  let server: PostgresServer | undefined;
  const clients: Client[] = [];

  const connect = async (url: string) => {
    const c = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
    c.on('error', () => undefined);
    clients.push(c);
    await c.connect();
    return c;
  };
  const start = async () =>
    (server = await startPostgres({ binDir: requirePostgresBinDir(), dir, port, durable: false }));

  beforeAll(async () => {
    dir = path.join(testEnv().dir, uniqueName('service-role'));
    port = await freePort();
    await start();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is what the service logs in as: no superuser, no CREATEDB or CREATEROLE, owner of the document store only', async () => {
    const url = new URL(server!.url);
    expect(decodeURIComponent(url.username)).toBe(POSTGRES_SERVICE_ROLE);
    expect(url.pathname).toBe(`/${FERRETDB_DATABASE}`);
    const service = await connect(server!.url);
    const me = (
      await service.query(
        'SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = current_user',
      )
    ).rows[0];
    expect(me).toEqual({
      rolsuper: false,
      rolcreatedb: false,
      rolcreaterole: false,
      rolreplication: false,
      rolbypassrls: false,
    });
    const owner = (
      await service.query('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = current_database()')
    ).rows[0];
    expect(owner).toEqual({ owner: POSTGRES_SERVICE_ROLE });
    // What FerretDB does with it: a schema per MongoDB database, tables and indexes in it.
    await service.query(
      'CREATE SCHEMA store_a; CREATE TABLE store_a.docs (_jsonb jsonb); CREATE INDEX ON store_a.docs ((_jsonb->>$$_id$$))',
    );
    await service.query(`INSERT INTO store_a.docs VALUES ('{"_id": "x"}')`);
    expect((await service.query('SELECT count(*)::int AS n FROM store_a.docs')).rows[0]).toEqual({ n: 1 });
  });

  it('cannot act as the superuser would: each attempt is refused with PostgreSQL’s reason', async () => {
    const service = await connect(server!.url);
    const refused = async (sql: string) => {
      const e = await service.query(sql).then(
        () => null,
        (err: { code?: string; message: string }) => err,
      );
      return { sql, code: e?.code ?? 'accepted' };
    };
    const attempts = [
      'CREATE DATABASE other',
      'CREATE ROLE intruder LOGIN SUPERUSER',
      `ALTER ROLE ${POSTGRES_SERVICE_ROLE} SUPERUSER`,
      "COPY (SELECT 1) TO PROGRAM 'id > /tmp/pwned'",
      "SELECT pg_read_file('/etc/passwd')",
      "ALTER SYSTEM SET log_statement = 'all'",
      'CREATE EXTENSION IF NOT EXISTS file_fdw',
    ];
    const outcomes = [];
    for (const sql of attempts) outcomes.push(await refused(sql));
    // 42501: insufficient privilege (0A000 where the server has no such extension to refuse first).
    for (const o of outcomes) expect([o.sql, ['42501', '0A000', '58P01'].includes(o.code)]).toEqual([o.sql, true]);
    expect(fs.existsSync('/tmp/pwned')).toBe(false);

    // No other database takes its connection.
    for (const other of ['postgres', 'template1']) {
      const elsewhere = new URL(server!.url);
      elsewhere.pathname = `/${other}`;
      await expect(connect(elsewhere.toString())).rejects.toMatchObject({ code: '42501' });
    }
  });

  it('what the role plants in its own database is never run by the superuser: an operator, a search_path, a connection limit', async () => {
    const service = await connect(server!.url);
    // The CVE-2018-1058 pattern: an operator of its own, picked before pg_catalog's by an unqualified query.
    await service.query(`
      CREATE FUNCTION public.grab(a name, b text) RETURNS boolean LANGUAGE plpgsql AS $f$
      BEGIN EXECUTE 'ALTER ROLE ${POSTGRES_SERVICE_ROLE} SUPERUSER'; RETURN a::text NOT LIKE b; END $f$;
      CREATE OPERATOR public.!~~ (LEFTARG = name, RIGHTARG = text, FUNCTION = public.grab);
      CREATE FUNCTION public.grab(a name, b name) RETURNS boolean LANGUAGE plpgsql AS $f$
      BEGIN EXECUTE 'ALTER ROLE ${POSTGRES_SERVICE_ROLE} SUPERUSER'; RETURN a::text NOT LIKE b::text; END $f$;
      CREATE OPERATOR public.!~~ (LEFTARG = name, RIGHTARG = name, FUNCTION = public.grab);
      CREATE SCHEMA IF NOT EXISTS agent_control;
      ALTER DATABASE ${FERRETDB_DATABASE} SET search_path = public, pg_catalog;
      ALTER DATABASE ${FERRETDB_DATABASE} CONNECTION LIMIT 0;`);
    fs.rmSync(handedOverFile(dir)); // a data directory of an earlier version: the hand-over runs
    await ensureServiceRole(dir, port);
    const superuser = await connect(postgresSuperuserUrl(dir, port));
    const role = (await superuser.query('SELECT rolsuper FROM pg_roles WHERE rolname = $1', [POSTGRES_SERVICE_ROLE]))
      .rows[0];
    expect(role).toEqual({ rolsuper: false });
    const db = (
      await superuser.query(
        'SELECT datconnlimit, (SELECT count(*)::int FROM pg_db_role_setting WHERE setdatabase = d.oid) AS settings FROM pg_database d WHERE datname = $1',
        [FERRETDB_DATABASE],
      )
    ).rows[0];
    expect(db).toEqual({ datconnlimit: -1, settings: 0 });
    expect(fs.existsSync(handedOverFile(dir))).toBe(true);
  });

  it('its password is stored as a SCRAM verifier, and is in no statement the server logs', async () => {
    const password = fs.readFileSync(postgresServicePasswordFile(dir), 'utf8').trim();
    const superuser = await connect(postgresSuperuserUrl(dir, port));
    const stored = (
      await superuser.query<{ rolpassword: string }>('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [
        POSTGRES_SERVICE_ROLE,
      ])
    ).rows[0]!.rolpassword;
    const [, iterations, salt] = /^SCRAM-SHA-256\$(\d+):([^$]+)\$/.exec(stored)!;
    expect(stored).toBe(scramVerifier(password, Buffer.from(salt!, 'base64'), Number(iterations)));
    expect(fs.readFileSync(path.join(dir, 'postgres.log'), 'utf8')).not.toContain(password);
  });

  it('what an earlier version made as the superuser is handed over on the next start', async () => {
    const superuser = await connect(postgresSuperuserUrl(dir, port, FERRETDB_DATABASE));
    await superuser.query(
      'CREATE SCHEMA legacy; CREATE TABLE legacy.docs (_jsonb jsonb); CREATE SEQUENCE legacy.counter',
    );
    await superuser.query(`INSERT INTO legacy.docs VALUES ('{"_id": "old"}')`);
    const service = await connect(server!.url);
    await expect(service.query('SELECT * FROM legacy.docs')).rejects.toMatchObject({ code: '42501' });

    fs.rmSync(handedOverFile(dir)); // a data directory of an earlier version
    expect(await ensureServiceRole(dir, port)).toBe(3); // what each start runs
    const owners = (
      await superuser.query<{ name: string; owner: string }>(
        `SELECT nspname AS name, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = 'legacy'
         UNION ALL SELECT relname, pg_get_userbyid(relowner) FROM pg_class WHERE relnamespace = 'legacy'::regnamespace ORDER BY 1`,
      )
    ).rows;
    expect(owners).toEqual([
      { name: 'counter', owner: POSTGRES_SERVICE_ROLE },
      { name: 'docs', owner: POSTGRES_SERVICE_ROLE },
      { name: 'legacy', owner: POSTGRES_SERVICE_ROLE },
    ]);
    expect((await service.query('SELECT _jsonb FROM legacy.docs')).rows).toEqual([{ _jsonb: { _id: 'old' } }]);
    await service.query(`INSERT INTO legacy.docs VALUES ('{"_id": "new"}')`);
  });
});
