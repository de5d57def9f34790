/** The built-in runtime as a process of its own on loopback, with no control plane: the runtime's own suites. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/process/net';
import { eventually } from './eventually';
import { distPath } from './run';

export interface RuntimeProcess {
  url: string;
  child: ChildProcess;
  /** Its working directory: `workspace` in a new directory of its own. */
  workdir: string;
  /** The exit code, once it has exited. */
  exited: Promise<number | null>;
}

/**
 * Starts the built runtime (dist/src/runtime/main.js) with `key` as its session key, a new workspace in a
 * directory `prefix` names, and `env` over its variables; answers once it is alive (and kills it if it never is).
 */
export async function startRuntimeProcess(
  key: string,
  prefix: string,
  env: Record<string, string> = {},
): Promise<RuntimeProcess> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const workdir = path.join(root, 'workspace');
  fs.mkdirSync(workdir);
  const port = await freePort();
  const child = spawn(process.execPath, [distPath('src', 'runtime', 'main.js')], {
    env: {
      PATH: process.env.PATH,
      RUNTIME_PORT: String(port),
      SESSION_API_KEY: key,
      RUNTIME_WORKING_DIR: workdir,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const rt = { url: `http://127.0.0.1:${port}`, child, workdir, exited };
  try {
    await eventually(async () => (await fetch(`${rt.url}/alive`).catch(() => null))?.ok === true, {
      what: 'the runtime up',
      timeoutMs: 5000,
      intervalMs: 25,
    });
  } catch (e) {
    child.kill('SIGKILL'); // never up: nobody else holds it
    throw e;
  }
  return rt;
}
