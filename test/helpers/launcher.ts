/** Runs the real launcher (`npm start`'s program) as a process on free ports, in a data directory of its own. */
import { TEST_CGROUP_PARENT } from './env';
import net from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../src/process/net';
import { eventually } from './eventually';
import { distPath, runNode } from './run';
import { setTimeout as sleep } from 'node:timers/promises';

export { sleep };

export interface Launch {
  child: ChildProcess;
  /** Started in a process group of its own (`npm start`): signals go to the whole group. */
  group: boolean;
  output: () => string;
  exited: Promise<number | null>;
}

export interface LauncherPorts {
  api: number;
  mongo: number;
  postgres: number;
  temporal: number;
  ui: number;
}

/** The pid file of each supervised child, relative to the data directory. */
export const PID_FILES = {
  api: 'api',
  worker: 'worker',
  ferretdb: 'ferretdb/ferretdb',
  postgres: 'postgres/postgres',
  temporal: 'temporal/temporal',
  temporalServer: 'temporal-server/temporal',
} as const;

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 90_000): Promise<void> {
  // A check that throws counts as false: the error is not the report, `what` is.
  await eventually(async () => (await Promise.resolve(check()).catch(() => false)) === true, {
    what,
    timeoutMs,
    intervalMs: 100,
  });
}

/** Ports handed out by this process, never handed out twice. */
const handedOut = new Set<number>();

/**
 * A free loopback port below the kernel's ephemeral range (32768-60999 by default), where listen(0)
 * ports come from: the launcher binds its ports seconds after they are chosen, and an outgoing
 * connection of another test may be given an ephemeral port meanwhile (seen: "port ... is already in
 * use" under load).
 */
async function launcherPort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (handedOut.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) {
      handedOut.add(port);
      return port;
    }
  }
  return freePort();
}

export async function freeLauncherPorts(): Promise<LauncherPorts> {
  return {
    api: await launcherPort(),
    mongo: await launcherPort(),
    postgres: await launcherPort(),
    temporal: await launcherPort(),
    ui: await launcherPort(),
  };
}

export class Launcher {
  readonly launched: Launch[] = [];

  constructor(
    readonly dataDir: string,
    readonly ports: LauncherPorts,
    private readonly extraEnv: Record<string, string> = {},
  ) {}

  /**
   * Starts the launcher with `args`: its built program, or with `npmStart` the README's own command
   * (`npm start -- <args>`: the install and build checks of scripts/start.sh, then the program).
   */
  launch(args: string[] = [], npmStart = false): Launch {
    const [command, argv] = npmStart
      ? ['npm', ['start', '--silent', '--', ...args]]
      : [process.execPath, [distPath('scripts', 'launch.js'), ...args]];
    const child = spawn(command, argv, {
      cwd: path.resolve(__dirname, '..', '..'),
      // npm, its shell and the launcher in a process group of their own, as in a terminal: Ctrl-C reaches them all.
      detached: npmStart,
      env: {
        ...process.env,
        DATA_DIR: this.dataDir,
        API_PORT: String(this.ports.api),
        EMBEDDED_MONGODB_PORT: String(this.ports.mongo),
        EMBEDDED_POSTGRES_PORT: String(this.ports.postgres),
        POSTGRES_URL: '',
        FERRETDB_BACKEND: '',
        EMBEDDED_TEMPORAL_PORT: String(this.ports.temporal),
        EMBEDDED_TEMPORAL_UI_PORT: String(this.ports.ui),
        MONGODB_URI: '',
        TEMPORAL_ADDRESS: '',
        LOG_FORMAT: 'json',
        SANDBOX_PROCESS_ISOLATION: 'none', // see testConfig
        SANDBOX_CGROUP_PARENT: TEST_CGROUP_PARENT,
        SANDBOX_DISKS: 'off',
        ...this.extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const l = { child, output: () => out, exited, group: npmStart };
    this.launched.push(l);
    return l;
  }

  /** Ctrl-C: SIGINT to the launcher (and to npm and its shell, with `npm start`); answers its exit code. */
  async interrupt(l: Launch): Promise<number | null> {
    if (l.child.exitCode === null && l.child.signalCode === null) this.signal(l, 'SIGINT');
    return l.exited;
  }

  private signal(l: Launch, signal: NodeJS.Signals): void {
    try {
      if (l.group) process.kill(-l.child.pid!, signal);
      else l.child.kill(signal);
    } catch {
      // gone already
    }
  }

  /** Waits for the launcher's banner (everything up). */
  async waitUp(l: Launch): Promise<void> {
    const up = () => l.output().includes('Ctrl-C stops everything');
    await eventually(
      () => {
        if (!up() && l.child.exitCode === null) throw new Error(`launcher not up in 120 s:\n${l.output()}`);
      },
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    if (!up()) throw new Error(`launcher exited early:\n${l.output()}`);
  }

  api(p: string, key?: string, init: RequestInit = {}): Promise<Response> {
    const headers = {
      ...(key ? { 'X-Access-Token': key } : {}),
      ...(init.body ? { 'Content-Type': 'application/json' } : {}),
      ...(init.headers as Record<string, string>),
    };
    return fetch(`http://127.0.0.1:${this.ports.api}${p}`, { ...init, headers });
  }

  pidOf(name: keyof typeof PID_FILES): number | undefined {
    try {
      return Number(fs.readFileSync(path.join(this.dataDir, `${PID_FILES[name]}.pid`), 'utf8'));
    } catch {
      return undefined;
    }
  }

  pids(): number[] {
    return (Object.keys(PID_FILES) as (keyof typeof PID_FILES)[])
      .map((n) => this.pidOf(n))
      .filter((p): p is number => p !== undefined);
  }

  /** The diagnostics workflow: succeeds only when a worker polls Temporal and reaches the database. */
  async doctor(): Promise<boolean> {
    const r = await runNode(
      distPath('src', 'cli', 'admin.js'),
      ['--json', 'doctor', '--timeout', '15'],
      { DATA_DIR: this.dataDir, MONGODB_URI: '', TEMPORAL_ADDRESS: '', LOG_LEVEL: 'silent' },
      30_000,
    );
    return r.code === 0;
  }

  /** A failed assertion must not leave servers running: stop launchers, then whatever their pid files name. */
  killAll(): void {
    for (const l of this.launched)
      if (l.child.exitCode === null && l.child.signalCode === null) this.signal(l, 'SIGKILL');
    for (const pid of this.pids()) if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
}
