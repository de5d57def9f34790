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
import { ensureServiceRole, FERRETDB_DATABASE, POSTGRES_SERVICE_ROLE, postgresSuperuserUrl, requirePostgresBinDir, startPostgres, type PostgresServer } from '../scripts/servers/postgres-server';
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
  const start = async () => (server = await startPostgres({ binDir: requirePostgresBinDir(), dir, port, durable: false }));

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
    const me = (await service.query('SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = current_user')).rows[0];
    expect(me).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false });
    const owner = (await service.query('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = current_database()')).rows[0];
    expect(owner).toEqual({ owner: POSTGRES_SERVICE_ROLE });
    // What FerretDB does with it: a schema per MongoDB database, tables and indexes in it.
    await service.query('CREATE SCHEMA store_a; CREATE TABLE store_a.docs (_jsonb jsonb); CREATE INDEX ON store_a.docs ((_jsonb->>$$_id$$))');
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
    const elsewhere = new URL(server!.url);
    elsewhere.pathname = '/postgres';
    await expect(connect(elsewhere.toString())).rejects.toMatchObject({ code: '42501' });
  });

  it('what an earlier version made as the superuser is handed over on the next start', async () => {
    const superuser = await connect(postgresSuperuserUrl(dir, port));
    await superuser.query('CREATE SCHEMA legacy; CREATE TABLE legacy.docs (_jsonb jsonb); CREATE SEQUENCE legacy.counter');
    await superuser.query(`INSERT INTO legacy.docs VALUES ('{"_id": "old"}')`);
    const service = await connect(server!.url);
    await expect(service.query('SELECT * FROM legacy.docs')).rejects.toMatchObject({ code: '42501' });

    await ensureServiceRole(dir, port); // what each start runs
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
