/**
 * A Docker engine for the tests and benches of the docker provider. The one the developer runs (at
 * DOCKER_HOST, or /var/run/docker.sock) is used when it answers. Otherwise, when this runs as root on a
 * Debian-like machine, Debian's docker.io is installed (once, about 30 s) and a dockerd of the project's
 * own is started in the background and stopped by its pid at the end: it leaves the host's firewall alone
 * (no iptables rules, no forwarding, so containers reach nothing outside the machine) and keeps its images
 * under the servers' cache, so later runs do not build them again.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { startChild, type Child } from '../servers/child';
import { aptInstall, hasCommand } from '../host-packages';
import { serversCacheRoot } from '../servers/paths';
import { setTimeout as sleep } from 'node:timers/promises';

const run = promisify(execFile);

export interface DockerEngine {
  /** DOCKER_HOST form: unix:///path or tcp://host:port. */
  host: string;
  /** Whether the project started this engine (and stops it). */
  own: boolean;
  /** The engine's version, as /version reports it. */
  version: string;
  /** Stops the engine when the project started it; a no-op for the developer's own. */
  stop(): Promise<void>;
}

/** GET on the Engine API at a DOCKER_HOST; resolves with the status and body, or rejects. */
export function engineGet(host: string, urlPath: string, timeoutMs = 2000): Promise<{ status: number; body: string }> {
  const target = host.startsWith('unix://')
    ? { socketPath: host.slice('unix://'.length), path: urlPath }
    : (() => {
        const u = new URL(host.replace(/^tcp:/, 'http:'));
        return { host: u.hostname, port: Number(u.port || 2375), path: urlPath };
      })();
  return new Promise((resolve, reject) => {
    const req = http.get({ ...target, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${host} within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

async function answers(host: string): Promise<string | null> {
  try {
    const ping = await engineGet(host, '/_ping');
    if (ping.status !== 200) return null;
    const version = JSON.parse((await engineGet(host, '/version')).body) as { Version?: string; ApiVersion?: string };
    return `${version.Version} (API ${version.ApiVersion})`;
  } catch {
    return null;
  }
}

export interface EngineOptions {
  /** Where a project-run engine keeps its state (default: beside the servers' cache). */
  stateDir?: string;
  say?: (line: string) => void;
}

export function dockerStateDir(override?: string): string {
  return override ?? path.join(path.dirname(serversCacheRoot(process.env.SERVERS_CACHE_DIR)), 'docker');
}

/** Why no engine can be had here, or null when this process may install and run one. */
export function cannotRunEngine(): string | null {
  if (process.platform !== 'linux') return 'the project runs its own Docker engine only on Linux';
  if (process.getuid?.() !== 0) return 'the project installs and runs its own Docker engine only as root';
  if (!fs.existsSync('/usr/bin/apt-get') && !fs.existsSync('/usr/sbin/dockerd'))
    return 'no dockerd and no apt-get to install one';
  return null;
}

/** The developer's engine when it answers, else one of the project's own (installed when missing). */
export async function ensureDockerEngine(opts: EngineOptions = {}): Promise<DockerEngine> {
  const say = opts.say ?? (() => {});
  const theirs = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
  const version = await answers(theirs);
  if (version) return { host: theirs, own: false, version, stop: async () => {} };

  const state = dockerStateDir(opts.stateDir);
  const socket = path.join(state, 'run', 'docker.sock');
  const host = `unix://${socket}`;
  const pidFile = path.join(state, 'run', 'dockerd.pid');
  // Another run of the project (a bench beside the tests) already runs it: share it, leave it to that run.
  const shared = await answers(host);
  if (shared) return { host, own: false, version: shared, stop: async () => {} };

  const why = cannotRunEngine();
  if (why) throw new Error(`no Docker engine answers at ${theirs}, and ${why}`);
  if (!(await hasCommand('dockerd'))) await aptInstall(['docker.io'], say);
  await reapOwnEngine(pidFile);

  fs.mkdirSync(path.join(state, 'run'), { recursive: true });
  fs.rmSync(socket, { force: true });
  const bridgeExisted = fs.existsSync('/sys/class/net/docker0');
  const execRoot = path.join(state, 'run', 'exec');
  for (const mount of mountsUnder(execRoot)) await run('umount', [mount]).catch(() => undefined); // a killed run's
  const started = Date.now();
  const child: Child = await startChild({
    name: 'dockerd',
    command: 'dockerd',
    args: [
      // The host's firewall and forwarding stay as they are: containers reach the host's bridge address
      // and each other, nothing beyond; published ports go through docker-proxy.
      '--iptables=false',
      '--ip6tables=false',
      '--ip-forward=false',
      // A network per docker sandbox: /24s from a /15 give 512 (the defaults run out at about 30).
      '--default-address-pool=base=172.18.0.0/15,size=24',
      `--data-root=${path.join(state, 'data')}`,
      `--exec-root=${execRoot}`,
      `--pidfile=${pidFile}`,
      `--host=${host}`,
    ],
    logFile: path.join(state, 'dockerd.log'),
    ready: async () => (await answers(host)) !== null,
    readyTimeoutMs: 60_000,
  });
  const ownVersion = (await answers(host)) ?? 'unknown';
  say(`started dockerd ${ownVersion} (pid ${child.process.pid}) at ${host} in ${Date.now() - started} ms`);
  return {
    host,
    own: true,
    version: ownVersion,
    async stop() {
      await child.stop(20_000);
      // dockerd leaves its default bridge and its network namespace's mount behind: remove them.
      if (!bridgeExisted && fs.existsSync('/sys/class/net/docker0'))
        await run('ip', ['link', 'delete', 'docker0']).catch(() => undefined);
      for (const mount of mountsUnder(execRoot)) await run('umount', [mount]).catch(() => undefined);
    },
  };
}

/** Mount points below `dir` (deepest first), from /proc/self/mounts. */
function mountsUnder(dir: string): string[] {
  let table: string;
  try {
    table = fs.readFileSync('/proc/self/mounts', 'utf8');
  } catch {
    return [];
  }
  return table
    .split('\n')
    .map((line) => line.split(' ')[1]?.replace(/\\040/g, ' '))
    .filter((m): m is string => !!m && m.startsWith(dir + '/'))
    .sort((a, b) => b.length - a.length);
}

/** A dockerd of ours that a killed run left behind (its pid file names it): stop it before starting another. */
async function reapOwnEngine(pidFile: string): Promise<void> {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1) return;
  try {
    if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('dockerd')) return;
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  for (let i = 0; i < 200; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await sleep(100);
  }
  process.kill(pid, 'SIGKILL');
}
