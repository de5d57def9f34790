/**
 * The README's first command, end to end: the launcher builds nothing new (the binaries are cached),
 * starts Temporal, FerretDB, the api and the worker, prints the URLs and a first key, stops everything
 * on Ctrl-C, reuses its data on the next start, and recovers from a kill -9.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, portOpen } from '../src/process/net';
import { testEnv } from './helpers/env';
import { distPath } from './helpers/run';

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
});
