/**
 * The README's first command, end to end: the launcher builds nothing new (the binaries are cached),
 * starts Temporal, FerretDB, the api and the worker, prints the URLs and a first key, stops everything
 * on Ctrl-C, reuses its data on the next start, recovers from a kill -9 of itself, and restarts any of
 * its children killed with -9 while it keeps running.
 */
import fs from 'node:fs';
import path from 'node:path';
import { portOpen } from '../src/process/net';
import { testEnv } from './helpers/env';
import { alive, freeLauncherPorts, Launcher, until, type PID_FILES } from './helpers/launcher';

describe('launcher (npm start)', () => {
  const dataDir = path.join(testEnv().dir, 'launcher-data');
  let launcher: Launcher;
  let ports: Launcher['ports'];

  beforeAll(async () => {
    launcher = new Launcher(dataDir, await freeLauncherPorts());
    ports = launcher.ports;
  });

  const launch = () => launcher.launch();
  const waitUp = async (l: ReturnType<typeof launch>) => {
    await launcher.waitUp(l);
    expect(l.output()).toContain('Ctrl-C stops everything');
  };
  const api = (p: string, key?: string) => launcher.api(p, key);
  const pids = () => launcher.pids();
  const doctor = () => launcher.doctor();

  let adminKey: string;
  let firstKey: string;
  // A failed assertion must not leave servers running.
  afterAll(() => launcher.killAll());

  it('first start: everything up, URLs and an admin key printed', async () => {
    const l = launch();
    await waitUp(l);
    const out = l.output();
    expect(out).toContain(`API          http://127.0.0.1:${ports.api}`);
    expect(out).toContain(`Temporal UI  http://127.0.0.1:${ports.ui}`);
    adminKey = out.match(/\n\s+(acp_[A-Za-z0-9_-]{43})\n/)![1]!;

    expect((await api('/ready')).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ports.ui}/`)).status).toBe(200);
    const me = await api('/api/v1/users/me', adminKey);
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ email: 'admin@localhost' });
    const running = pids();
    expect(running).toHaveLength(5); // api, worker, FerretDB, PostgreSQL, Temporal
    // FerretDB stores into the embedded PostgreSQL, which takes a password only (no trust, no socket).
    expect(out).toContain(`(FerretDB on PostgreSQL 127.0.0.1:${ports.postgres}`);
    expect(fs.statSync(path.join(dataDir, 'postgres', 'password')).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path.join(dataDir, 'postgres', 'data', 'pg_hba.conf'), 'utf8')).not.toMatch(
      /^\s*(host|local)\b.*\btrust\s*$/m,
    );
    // The key that seals secrets is created on the first run, readable by this user only.
    const keyFile = path.join(dataDir, 'secrets.key');
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    firstKey = fs.readFileSync(keyFile, 'utf8');

    l.child.kill('SIGINT');
    expect(await l.exited).toBe(0);
    for (const pid of running) expect(alive(pid)).toBe(false);
    for (const port of Object.values(ports)) expect(await portOpen(port)).toBe(false);
  }, 180_000);

  it('second start reuses the data: no new key, the first one still works', async () => {
    const l = launch();
    await waitUp(l);
    expect(l.output()).not.toMatch(/acp_[A-Za-z0-9_-]{43}/);
    expect(l.output()).toContain('Admin key: created on the first run');
    expect(fs.readFileSync(path.join(dataDir, 'secrets.key'), 'utf8')).toBe(firstKey);
    expect((await api('/api/v1/users/me', adminKey)).status).toBe(200);

    // kill -9 of the launcher: its api and worker notice and stop; the servers it left are reaped next time.
    l.child.kill('SIGKILL');
    await l.exited;
    const third = launch();
    await waitUp(third);
    expect((await api('/api/v1/users/me', adminKey)).status).toBe(200);
    third.child.kill('SIGINT');
    expect(await third.exited).toBe(0);
    for (const port of Object.values(ports)) expect(await portOpen(port)).toBe(false);
  }, 240_000);

  it('supervises: a child killed with -9 is restarted, the service answers again, the launcher keeps running', async () => {
    const l = launch();
    await waitUp(l);
    expect(await doctor()).toBe(true);
    const pidOf = (name: keyof typeof PID_FILES) => launcher.pidOf(name);
    const ready = async () => (await api('/ready')).status === 200;
    const served = async () =>
      (await ready()) && (adminKey === undefined || (await api('/api/v1/users/me', adminKey)).status === 200);
    const cases: [name: keyof typeof PID_FILES, answers: () => Promise<boolean>][] = [
      ['api', served],
      ['worker', doctor],
      ['ferretdb', async () => (await served()) && (await doctor())],
      ['postgres', async () => (await served()) && (await doctor())],
      ['temporal', async () => (await ready()) && (await doctor())],
    ];
    const downtime: Record<string, number> = {};
    for (const [name, answers] of cases) {
      const before = Object.fromEntries(cases.map(([n]) => [n, pidOf(n)]));
      const killed = before[name]!;
      process.kill(killed, 'SIGKILL');
      const killedAt = Date.now();
      await until(`${name} restarted`, () => {
        const pid = pidOf(name);
        return pid !== undefined && pid !== killed && alive(pid);
      });
      await until(`${name}: the service answers again`, answers);
      downtime[name] = Date.now() - killedAt;
      expect(l.child.exitCode).toBeNull();
      expect(alive(killed)).toBe(false);
      // The others were not restarted: the api and worker reconnect to a server that came back.
      for (const [other] of cases) if (other !== name) expect([other, pidOf(other)]).toEqual([other, before[other]]);
      // Why, and which log to read: <data>/logs/api.log, <data>/ferretdb/ferretdb.log, ...
      expect(l.output()).toMatch(
        new RegExp(
          `${name} \\(pid ${killed}\\) exited unexpectedly with signal SIGKILL after [^;]*; see [^"]*/${name}\\.log; restarting in 500 ms`,
        ),
      );
    }
    console.log(
      `downtime after kill -9 (until the service answers again): ${Object.entries(downtime)
        .map(([n, ms]) => `${n} ${(ms / 1000).toFixed(1)} s`)
        .join(', ')}`,
    );

    l.child.kill('SIGINT');
    expect(await l.exited).toBe(0);
    for (const port of Object.values(ports)) expect(await portOpen(port)).toBe(false);
  }, 240_000);
});

describe('launcher (npm start) on the data of an earlier version (FerretDB on SQLite)', () => {
  const dataDir = path.join(testEnv().dir, 'launcher-upgrade-data');
  let old: Launcher;
  let current: Launcher;
  afterAll(() => {
    old?.killAll();
    current?.killAll();
  });

  it('moves the SQLite data into PostgreSQL once: the same users and keys, the old files kept aside', async () => {
    const ports = await freeLauncherPorts();
    old = new Launcher(dataDir, ports, { FERRETDB_BACKEND: 'sqlite' });
    const first = old.launch();
    await old.waitUp(first);
    const key = first.output().match(/\n\s+(acp_[A-Za-z0-9_-]{43})\n/)![1]!;
    const made = await old.api('/api/v1/api-keys', key, {
      method: 'POST',
      body: JSON.stringify({ name: 'kept across the move' }),
    });
    expect(made.status).toBe(201);
    const secondKey = ((await made.json()) as { key: string }).key;
    first.child.kill('SIGINT');
    expect(await first.exited).toBe(0);
    expect(fs.readdirSync(path.join(dataDir, 'ferretdb', 'sqlite')).some((f) => f.endsWith('.sqlite'))).toBe(true);

    current = new Launcher(dataDir, ports);
    const second = current.launch();
    await current.waitUp(second);
    expect(second.output()).toMatch(/moved \d+ documents in \d+ collections into PostgreSQL/);
    expect(second.output()).not.toMatch(/acp_[A-Za-z0-9_-]{43}/); // no new admin: the old one came along
    expect((await current.api('/api/v1/users/me', key)).status).toBe(200);
    expect((await current.api('/api/v1/users/me', secondKey)).status).toBe(200);
    const keys = (await (await current.api('/api/v1/api-keys/search', key)).json()) as { items: { name: string }[] };
    expect(keys.items.map((k) => k.name)).toContain('kept across the move');
    expect(fs.existsSync(path.join(dataDir, 'ferretdb', 'sqlite'))).toBe(false);
    expect(fs.readdirSync(dataDir).filter((f) => f.startsWith('ferretdb-sqlite-migrated-'))).toHaveLength(1);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);

    // Once: the next start has nothing to move.
    const third = current.launch();
    await current.waitUp(third);
    expect(third.output()).not.toMatch(/moved \d+ documents/);
    expect((await current.api('/api/v1/users/me', key)).status).toBe(200);
    third.child.kill('SIGINT');
    expect(await third.exited).toBe(0);
  }, 240_000);
});
