/**
 * The real OpenHands agent server (PyPI `openhands-agent-server` with `openhands-sdk` and
 * `openhands-tools`), installed once from the hash-checked lock file `runtimes/openhands/requirements.lock`
 * into a Python environment of its own in the servers' cache, named by the lock's and the interpreter's
 * content: a changed lock or another Python makes a new environment, an unchanged one is reused.
 *
 * The environment is self-contained where it has to be: a Python whose installation others may read (a
 * system one) gets a virtual environment; one in a private directory (pyenv under /root) is copied into
 * the environment (its standard library, not what was installed into it), so a sandbox uid can run it
 * once the environment is where it may read it (process-shared-runtime.ts shares it). Such a copy finds its
 * libpython through `libDir`. Everything installed is hash-checked: pip, setuptools and wheel from
 * pip.lock, then the agent server's lock with no build isolation (its one source archive builds with the
 * locked setuptools). PIP_* variables pass through (a mirror, a proxy): hashes decide what is accepted.
 *
 * Run directly (`node dist/scripts/servers/agent-server.js`) it installs what is missing and prints the
 * environment's description.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  AGENT_SERVER_DESCRIPTION,
  readAgentServerEnv,
  type AgentServerDescription,
  type AgentServerEnv,
} from '../../src/process/agent-server-env';
import { repoRoot, serversCacheRoot } from './paths';

const execFileAsync = promisify(execFile);

/** The lock file, the single source of the pinned versions. */
export const agentServerLock = () => path.join(repoRoot(), 'runtimes', 'openhands', 'requirements.lock');
/** The pip that installs it (installed first: some Pythons bundle a pip that cannot read the lock). */
export const pipLock = () => path.join(repoRoot(), 'runtimes', 'openhands', 'pip.lock');

/** The pinned openhands-agent-server version, as the lock file names it. */
export function agentServerVersion(lock = fs.readFileSync(agentServerLock(), 'utf8')): string {
  const m = /^openhands-agent-server==([^\s;\\]+)/m.exec(lock);
  if (!m) throw new Error(`${agentServerLock()} pins no openhands-agent-server`);
  return m[1]!;
}

/** The oldest Python the SDK supports. */
const MIN_PYTHON: [number, number] = [3, 12];

type Say = (line: string) => void;

export interface Interpreter {
  path: string;
  version: string;
  /** sys.base_prefix: the installation it belongs to. */
  prefix: string;
}

async function inspect(python: string): Promise<Interpreter | null> {
  try {
    const { stdout } = await execFileAsync(
      python,
      ['-I', '-c', 'import sys, platform; print(platform.python_version()); print(sys.base_prefix)'],
      { timeout: 20_000 },
    );
    const [version, prefix] = stdout.trim().split('\n');
    return version && prefix ? { path: python, version, prefix } : null;
  } catch {
    return null;
  }
}

const atLeast = (version: string) => {
  const [major, minor] = version.split('.').map(Number) as [number, number];
  return major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
};

/**
 * A Python >= 3.12: AGENT_SERVER_PYTHON when set (it must qualify), else the newest of pyenv's builds and
 * the system's python3.1x, looked up by absolute paths (never through PATH).
 */
export async function findPython(env: NodeJS.ProcessEnv = process.env): Promise<Interpreter> {
  const wanted = env.AGENT_SERVER_PYTHON;
  if (wanted) {
    const found = await inspect(wanted);
    if (!found || !atLeast(found.version)) {
      throw new Error(
        `AGENT_SERVER_PYTHON=${wanted} is ${found ? `Python ${found.version}` : 'not a Python that runs'}; the agent server needs Python ${MIN_PYTHON.join('.')} or newer`,
      );
    }
    return found;
  }
  const pyenvRoot = env.PYENV_ROOT || path.join(os.homedir(), '.pyenv');
  const candidates = [
    ...(fs.existsSync(path.join(pyenvRoot, 'versions'))
      ? fs
          .readdirSync(path.join(pyenvRoot, 'versions'))
          .map((v) => path.join(pyenvRoot, 'versions', v, 'bin', 'python3'))
      : []),
    ...['/usr/local/bin', '/usr/bin'].flatMap((d) => ['3.14', '3.13', '3.12'].map((v) => path.join(d, `python${v}`))),
  ].filter((p) => fs.existsSync(p));
  const found = (await Promise.all(candidates.map(inspect))).filter(
    (i): i is Interpreter => i !== null && atLeast(i.version),
  );
  found.sort((a, b) => compareVersions(b.version, a.version));
  if (!found[0]) {
    throw new Error(
      `the agent server needs Python ${MIN_PYTHON.join('.')} or newer, and none was found (looked in ${pyenvRoot}/versions, /usr/local/bin, /usr/bin): ` +
        'install one (`apt-get install python3.12` where the system has it, or `pyenv install 3.12`), or name it with AGENT_SERVER_PYTHON',
    );
  }
  return found[0];
}

function compareVersions(a: string, b: string): number {
  const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

/** Whether every directory down to `p` lets others in and `p` is readable by them. */
function othersCanRead(p: string): boolean {
  const real = fs.realpathSync(p);
  let dir = real;
  for (;;) {
    if ((fs.statSync(dir).mode & 0o001) === 0) return false;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return (fs.statSync(real).mode & 0o004) !== 0;
}

/** How an environment is made: a new recipe makes new environments rather than reuse one made otherwise. */
const RECIPE = '2: no base site-packages; ensurepip; pip.lock; requirements.lock without build isolation';

/**
 * A short digest of what makes a Python environment (its recipe and locks, then pip.lock and the
 * interpreter): part of the environment's directory name, so that any change makes a new one.
 */
export function environmentKey(python: Interpreter, ...inputs: string[]): string {
  const hash = createHash('sha256');
  for (const input of inputs) hash.update(input);
  return hash
    .update(fs.readFileSync(pipLock()))
    .update(python.version)
    .update(fs.realpathSync(python.path))
    .digest('hex')
    .slice(0, 12);
}

/** The environment's directory for this lock and interpreter. */
function envDir(cacheRoot: string, lock: string, python: Interpreter): string {
  const key = environmentKey(python, RECIPE, lock);
  return path.join(cacheRoot, `openhands-agent-server-${agentServerVersion(lock)}-py${python.version}-${key}`);
}

/** Installs the agent server when its environment is missing; answers the environment. */
export async function ensureAgentServer(
  cacheDir?: string,
  say: Say = () => {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<AgentServerEnv> {
  const lock = fs.readFileSync(agentServerLock(), 'utf8');
  const python = await findPython(env);
  const dir = envDir(serversCacheRoot(cacheDir), lock, python);
  const ready = readAgentServerEnv(dir);
  if (ready) return ready;

  const version = agentServerVersion(lock);
  say(
    `installing openhands-agent-server ${version} on Python ${python.version} (${python.path}) into ${dir} from the hash-checked lock (a minute or two, once)`,
  );
  const started = Date.now();
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const work = fs.mkdtempSync(`${dir}.build-`);
  try {
    // An interpreter others may run gets a virtual environment; a private one (pyenv in a 0700 home) is copied.
    let interpreter: string;
    let libDir: string | null = null;
    if (othersCanRead(python.prefix) && othersCanRead(python.path)) {
      await execFileAsync(python.path, ['-I', '-m', 'venv', work], { timeout: 120_000 });
      interpreter = 'bin/python3';
    } else {
      // The interpreter and its standard library, without what was installed into it (its site-packages:
      // packages and .pth files no lock names, which would run at every start of the agent server).
      const [major, minor] = python.version.split('.');
      const sitePackages = path.join(python.prefix, 'lib', `python${major}.${minor}`, 'site-packages');
      fs.cpSync(python.prefix, path.join(work, 'python'), {
        recursive: true,
        verbatimSymlinks: true,
        filter: (src) => !src.startsWith(sitePackages + path.sep),
      });
      interpreter = path.join('python', path.relative(python.prefix, fs.realpathSync(python.path)));
      libDir = path.join('python', 'lib');
    }
    const installEnv = {
      ...env,
      PIP_DISABLE_PIP_VERSION_CHECK: '1',
      PIP_NO_INPUT: '1',
      ...(libDir ? { LD_LIBRARY_PATH: path.join(work, libDir) } : {}),
    };
    // A pip from the standard library's own wheel (a venv has one already), then everything hash-checked;
    // the one source archive builds with the locked setuptools, never with build tools fetched unchecked.
    if (libDir)
      await execFileAsync(path.join(work, interpreter), ['-I', '-m', 'ensurepip', '--default-pip'], {
        env: installEnv,
        timeout: 300_000,
      });
    for (const [requirements, extra] of [
      [pipLock(), []],
      [agentServerLock(), ['--no-build-isolation']],
    ] as const) {
      await execFileAsync(
        path.join(work, interpreter),
        ['-I', '-m', 'pip', 'install', '--quiet', '--require-hashes', '--no-deps', ...extra, '-r', requirements],
        {
          env: installEnv,
          timeout: 20 * 60_000,
          maxBuffer: 16 << 20,
        },
      ).catch((e: Error & { stderr?: string }) => {
        throw new Error(
          `installing ${path.basename(requirements)} failed: ${(e.stderr ?? e.message).trim().split('\n').slice(-15).join('\n')}`,
          { cause: e },
        );
      });
    }
    await execFileAsync(path.join(work, interpreter), ['-I', '-c', 'import openhands.agent_server, openhands.tools'], {
      env: installEnv,
      timeout: 120_000,
    });
    const description: AgentServerDescription = { python: interpreter, libDir, version, pythonVersion: python.version };
    fs.writeFileSync(path.join(work, AGENT_SERVER_DESCRIPTION), JSON.stringify(description, null, 2));
    try {
      fs.renameSync(work, dir);
    } catch (e) {
      // Another install finished first: its environment is as good as this one.
      if (!readAgentServerEnv(dir)) throw e;
      fs.rmSync(work, { recursive: true, force: true });
    }
  } catch (e) {
    fs.rmSync(work, { recursive: true, force: true });
    throw e;
  }
  say(`installed openhands-agent-server ${version} in ${Math.round((Date.now() - started) / 1000)} s`);
  return readAgentServerEnv(dir)!;
}

if (require.main === module) {
  ensureAgentServer(process.env.SERVERS_CACHE_DIR, (l) => console.error(l)).then(
    (e) => console.log(JSON.stringify(e, null, 2)),
    (e: Error) => {
      console.error(e.message);
      process.exit(1);
    },
  );
}
