/**
 * Two users, A and B, each with a RUNNING process sandbox isolated as its own uid (as root), in a service
 * of their own whose worker has, first on its PATH, a directory another user owns and can write with a
 * planted copy of every program the worker or a runtime used to find through PATH (each leaves a mark,
 * `ran-<name>-<uid>`, then runs the real one); a private git host (acme/private, behind `gitToken`) and a
 * scripted LLM the sandboxes may reach; a directory every user may write. What
 * test/root/sandbox-escapes.test.ts tries B against. close() ends it all and puts PATH back.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { removeSandboxFirewall } from '../../activities/sandbox-providers/process-firewall';
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { processesOfUser, signalAll } from '../../src/process/process-tree';
import { SYSTEM_DIRS } from '../../src/process/trusted-path';
import { runtimeOf, type Runtime } from './agent';
import type { TestApi } from './api';
import { bareRepo } from './git-repo';
import { GitHttpsServer } from './git-https-server';
import { runningSandbox } from './sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from './service';

/** Programs the worker or a runtime used to find through PATH. */
const PLANTED = [
  'iptables',
  'ip6tables',
  'iptables-restore',
  'ip6tables-restore',
  'git',
  'bash',
  'sh',
  'node',
  'kill',
  'mkdir',
  'unshare',
  'mount',
  'setpriv',
];

export type Who = 'a' | 'b';
export interface IsolatedBox {
  s: any;
  rt: Runtime;
  dir: string;
  uid: number;
}

export interface IsolatedSandboxPair {
  t: TestApi;
  dataDir: string;
  /** The planted directory, first on PATH. */
  plant: string;
  /** A directory every user may write, beyond the usual temporary ones. */
  openDir: string;
  git: GitHttpsServer;
  llm: ScriptedLlm;
  users: Record<Who, { userId: string; key: string }>;
  /** Each user's sandbox; a test may replace a box's runtime (`rt`) after a restart. */
  boxes: Record<Who, IsolatedBox>;
  close: () => Promise<void>;
}

/** Starts it all with the sandboxes' uids in `range`, the git host taking `gitToken`. */
export async function startIsolatedSandboxPair(
  range: [number, number],
  gitToken: string,
): Promise<IsolatedSandboxPair> {
  const originalPath = process.env.PATH;
  let shared: string | undefined; // readable by every uid: the git host's repositories and certificate
  let plant: string | undefined;
  let openDir: string | undefined;
  let git: GitHttpsServer | undefined;
  let llm: ScriptedLlm | undefined;
  let service: ServiceUnderTest | undefined;
  const boxes: Record<Who, IsolatedBox> = {} as any;
  const close = async () => {
    process.env.PATH = originalPath;
    await service?.close();
    await llm?.close();
    await git?.close();
    for (const d of [shared, plant, openDir]) if (d) fs.rmSync(d, { recursive: true, force: true });
    if (service) fs.rmSync(path.dirname(service.t.config.sandboxes.dir), { recursive: true, force: true });
  };

  try {
    shared = fs.mkdtempSync('/var/lib/agent-control-escapes-git-');
    fs.chmodSync(shared, 0o755);
    // A directory another user owns and can write, first on the worker's PATH: what a sandbox made of
    // `<tmp>/node_modules/.bin` under `npm start`. Each program in it leaves a mark, then runs the real one.
    plant = fs.mkdtempSync('/var/lib/agent-control-escapes-plant-');
    for (const name of PLANTED) {
      const real = execFileSync('sh', ['-c', `command -v ${name}`], {
        encoding: 'utf8',
        env: { PATH: SYSTEM_DIRS.join(':') },
      }).trim();
      fs.writeFileSync(path.join(plant, name), `#!/bin/sh\n: > "${plant}/ran-${name}-$(id -u)"\nexec ${real} "$@"\n`, {
        mode: 0o755,
      });
    }
    fs.chmodSync(plant, 0o777);
    fs.chownSync(plant, 4_400_000, 4_400_000);
    process.env.PATH = `${plant}:${originalPath}`;
    openDir = fs.mkdtempSync('/var/lib/agent-control-escapes-shared-');
    fs.chmodSync(openDir, 0o1777);

    bareRepo(path.join(shared, 'acme'), 'private', { 'README.md': '# private\n' });
    git = await new GitHttpsServer(shared, gitToken).start();
    fs.chmodSync(path.join(shared, '.tls'), 0o755);
    fs.chmodSync(git.certFile, 0o644);
    llm = await new ScriptedLlm([]).start();
    // The fixture's close() ends the runtimes under SANDBOXES_DIR (elsewhere, isolated); the uids and the
    // firewall go before the directory does.
    service = await startServiceUnderTest(
      '/var/lib/agent-control-escapes-',
      {
        SANDBOX_PROCESS_ISOLATION: 'user',
        SANDBOX_UID_RANGE: `${range[0]}-${range[1]}`,
        SANDBOX_LOCAL_ALLOW: [new URL(llm.url).host, new URL(git.url).host].join(','),
        SANDBOX_IDLE_TIMEOUT_MS: '0',
        SANDBOX_HEALTH_INTERVAL_MS: '500',
        GIT_CLONE_BASE_URL: git.url,
        SANDBOX_SPECS_FILE: git.writeTrustingSpecs(path.join(shared, 'specs.json')),
      },
      {
        beforeRemove: async () => {
          for (const { uid } of Object.values(boxes)) signalAll(await processesOfUser(uid), 'SIGKILL');
          await removeSandboxFirewall(range);
        },
      },
    );
    const { t, dataDir } = service;
    const users = { a: await t.newUser(), b: await t.newUser() };
    for (const who of ['a', 'b'] as const) {
      const s = await runningSandbox(t, users[who].key);
      const dir = path.join(t.config.sandboxes.dir, s.id);
      boxes[who] = { s, rt: runtimeOf(s), dir, uid: fs.statSync(path.join(dir, 'home')).uid };
    }
    return { t, dataDir, plant, openDir, git, llm, users, boxes, close };
  } catch (e) {
    await close();
    throw e;
  }
}
