/**
 * The README's first command, end to end: the launcher builds nothing new (the binaries are cached),
 * starts Temporal, FerretDB, the api and the worker, prints the URLs and a first key, stops everything
 * on Ctrl-C, reuses its data on the next start, recovers from a kill -9 of itself, and restarts any of
 * its children killed with -9 while it keeps running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, portOpen } from '../src/process/net';
import { testEnv } from './helpers/env';
import { distPath, runNode } from './helpers/run';

interface Launch {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

describe('launcher (npm start)', () => {
  const env = testEnv();
  const dataDir = path.join(env.dir, 'launcher-data');
  let ports: { api: number; mongo: number; temporal: number; ui: number };

  beforeAll(async () => {
    ports = { api: await freePort(), mongo: await freePort(), temporal: await freePort(), ui: await freePort() };
  });

  const launch = (): Launch => {
    const child = spawn(process.execPath, [distPath('scripts', 'launch.js')], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        API_PORT: String(ports.api),
        EMBEDDED_MONGODB_PORT: String(ports.mongo),
        EMBEDDED_TEMPORAL_PORT: String(ports.temporal),
        EMBEDDED_TEMPORAL_UI_PORT: String(ports.ui),
        MONGODB_URI: '',
        TEMPORAL_ADDRESS: '',
        LOG_FORMAT: 'json',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const l = { child, output: () => out, exited };
    launched.push(l);
    return l;
  };

  const waitUp = async (l: Launch) => {
    for (let i = 0; i < 1200 && !l.output().includes('Ctrl-C stops everything'); i++) {
      if (l.child.exitCode !== null) throw new Error(`launcher exited early:\n${l.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(l.output()).toContain('Ctrl-C stops everything');
  };

  const api = (p: string, key?: string) => fetch(`http://127.0.0.1:${ports.api}${p}`, { headers: key ? { 'X-Access-Token': key } : {} });

  const pids = () =>
    ['api', 'worker', 'ferretdb/ferretdb', 'temporal/temporal']
      .map((n) => path.join(dataDir, `${n}.pid`))
      .filter((f) => fs.existsSync(f))
      .map((f) => Number(fs.readFileSync(f, 'utf8')));

  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
  const until = async (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 90_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await Promise.resolve(check()).catch(() => false))) {
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
      await sleep(100);
    }
  };

  /** The diagnostics workflow: answers only when a worker polls Temporal and reaches the database. */
  const doctor = async () =>
    (
      await runNode(
        distPath('src', 'cli', 'admin.js'),
        ['--json', 'doctor', '--timeout', '15'],
        { DATA_DIR: dataDir, MONGODB_URI: '', TEMPORAL_ADDRESS: '', LOG_LEVEL: 'silent' },
        30_000,
      )
    ).code === 0;

  let adminKey: string;
  let firstKey: string;
  const launched: Launch[] = [];

  // A failed assertion must not leave servers running: stop launchers, then whatever their pid files name.
  afterAll(async () => {
    for (const l of launched) if (l.child.exitCode === null && l.child.signalCode === null) l.child.kill('SIGKILL');
    for (const pid of pids()) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

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
    expect(running).toHaveLength(4);
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
    const pidOf = (file: string) => {
      try {
        return Number(fs.readFileSync(path.join(dataDir, `${file}.pid`), 'utf8'));
      } catch {
        return undefined;
      }
    };
    const ready = async () => (await api('/ready')).status === 200;
    const served = async () => (await ready()) && (adminKey === undefined || (await api('/api/v1/users/me', adminKey)).status === 200);
    const cases: [name: string, pidFile: string, answers: () => Promise<boolean>][] = [
      ['api', 'api', served],
      ['worker', 'worker', doctor],
      ['ferretdb', 'ferretdb/ferretdb', async () => (await served()) && (await doctor())],
      ['temporal', 'temporal/temporal', async () => (await ready()) && (await doctor())],
    ];
    const downtime: Record<string, number> = {};
    for (const [name, pidFile, answers] of cases) {
      const before = Object.fromEntries(cases.map(([n, f]) => [n, pidOf(f)]));
      const killed = before[name]!;
      process.kill(killed, 'SIGKILL');
      const killedAt = Date.now();
      await until(`${name} restarted`, () => {
        const pid = pidOf(pidFile);
        return pid !== undefined && pid !== killed && alive(pid);
      });
      await until(`${name}: the service answers again`, answers);
      downtime[name] = Date.now() - killedAt;
      expect(l.child.exitCode).toBeNull();
      expect(alive(killed)).toBe(false);
      // The others were not restarted: the api and worker reconnect to a server that came back.
      for (const [other, file] of cases) if (other !== name) expect([other, pidOf(file)]).toEqual([other, before[other]]);
      // Why, and which log to read: <data>/logs/api.log, <data>/ferretdb/ferretdb.log, ...
      expect(l.output()).toMatch(new RegExp(`${name} \\(pid ${killed}\\) exited unexpectedly with signal SIGKILL after [^;]*; see [^"]*/${name}\\.log; restarting in 500 ms`));
    }
    console.log(`downtime after kill -9 (until the service answers again): ${Object.entries(downtime).map(([n, ms]) => `${n} ${(ms / 1000).toFixed(1)} s`).join(', ')}`);

    l.child.kill('SIGINT');
    expect(await l.exited).toBe(0);
    for (const port of Object.values(ports)) expect(await portOpen(port)).toBe(false);
  }, 240_000);
});
