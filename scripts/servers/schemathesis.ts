/**
 * schemathesis, the outside judge of the api's OpenAPI document (test/schemathesis.test.ts): installed once
 * from the hash-checked lock `tools/schemathesis/requirements.lock` into a virtual environment in the
 * servers' cache, named by the lock's and the interpreter's content (a changed lock or another Python makes
 * a new one). The Python is the agent server's (3.12 or newer, found the same way); pip comes first from
 * the agent server's pip.lock, then the lock with --require-hashes --no-deps (every package is a wheel).
 *
 * Run directly (`node dist/scripts/servers/schemathesis.js`) it installs what is missing and prints the
 * command's path.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { environmentKey, findPython, pipLock } from './agent-server';
import { repoRoot, serversCacheRoot } from './paths';

const execFileAsync = promisify(execFile);

export const schemathesisLock = () => path.join(repoRoot(), 'tools', 'schemathesis', 'requirements.lock');

/** The pinned schemathesis version, as the lock names it. */
export function schemathesisVersion(lock = fs.readFileSync(schemathesisLock(), 'utf8')): string {
  const m = /^schemathesis==([^\s;\\]+)/m.exec(lock);
  if (!m) throw new Error(`${schemathesisLock()} pins no schemathesis`);
  return m[1]!;
}

/**
 * The Python of the environment, installing it when missing: run schemathesis as `<python> -I -m
 * schemathesis.cli` (a virtual environment moved into place keeps a working interpreter, not its scripts).
 */
export async function ensureSchemathesis(
  cacheDir?: string,
  say: (line: string) => void = () => {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const lock = fs.readFileSync(schemathesisLock(), 'utf8');
  const python = await findPython(env);
  const key = environmentKey(python, lock);
  const version = schemathesisVersion(lock);
  const dir = path.join(serversCacheRoot(cacheDir), `schemathesis-${version}-py${python.version}-${key}`);
  const interpreter = path.join(dir, 'bin', 'python3');
  const done = path.join(dir, 'installed');
  if (fs.existsSync(done)) return interpreter;
  say(`installing schemathesis ${version} on Python ${python.version} into ${dir} from the hash-checked lock (once)`);
  const started = Date.now();
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const work = fs.mkdtempSync(`${dir}.build-`);
  try {
    await execFileAsync(python.path, ['-I', '-m', 'venv', work], { timeout: 120_000 });
    const installEnv = { ...env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_NO_INPUT: '1' };
    for (const requirements of [pipLock(), schemathesisLock()]) {
      const args = ['-I', '-m', 'pip', 'install', '--quiet', '--require-hashes', '--no-deps', '--only-binary', ':all:'];
      await execFileAsync(path.join(work, 'bin', 'python3'), [...args, '-r', requirements], {
        env: installEnv,
        timeout: 10 * 60_000,
        maxBuffer: 16 << 20,
      }).catch((e: Error & { stderr?: string }) => {
        throw new Error(
          `installing ${path.relative(repoRoot(), requirements)} failed: ${(e.stderr ?? e.message).trim().split('\n').slice(-15).join('\n')}`,
          { cause: e },
        );
      });
    }
    await execFileAsync(path.join(work, 'bin', 'python3'), ['-I', '-m', 'schemathesis.cli', '--version'], {
      timeout: 60_000,
    });
    fs.writeFileSync(path.join(work, 'installed'), `schemathesis ${version}\n`);
    try {
      fs.renameSync(work, dir);
    } catch (e) {
      // Another install finished first: its environment is as good as this one.
      if (!fs.existsSync(done)) throw e;
      fs.rmSync(work, { recursive: true, force: true });
    }
  } catch (e) {
    fs.rmSync(work, { recursive: true, force: true });
    throw e;
  }
  say(`installed schemathesis ${version} in ${Math.round((Date.now() - started) / 1000)} s`);
  return interpreter;
}

if (require.main === module) {
  ensureSchemathesis(process.env.SERVERS_CACHE_DIR, (l) => console.error(l)).then(
    (p) => console.log(p),
    (e: Error) => {
      console.error(e.message);
      process.exit(1);
    },
  );
}
