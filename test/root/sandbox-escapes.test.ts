/**
 * Issue 28: the doors out of an isolated process sandbox, each tried from a sandbox (user B) against
 * another user (A) or the service, and each now shut:
 *   1. a program planted in a directory on the worker's PATH that another user can write (iptables run
 *      as root, git run in A's sandbox);
 *   2. A's git token read from /proc/<pid>/cmdline while A's start clones a private repository;
 *   3. a listener on a service port (the api's, on [::1] beside the api, and on 127.0.0.1 after the api
 *      died) that gets clients' keys, and keeps the restarted api from binding;
 *   4. a FIFO where the worker used to read the runtime's port, which froze the worker for everyone;
 *   5. files in the shared temporary directories (and any other directory every user may write) and
 *      SysV IPC objects that outlive the sandbox.
 * The service, the users and their sandboxes: test/helpers/isolated-sandbox-pair.ts. Runs only as root
 * (jest.config.js).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { startApiServer } from '../../src/api/server';
import type { ScriptedLlm } from '../../src/llm/scripted-llm';
import { reclaimPort } from '../../src/process/net';
import { processesOfUser, readStat } from '../../src/process/process-tree';
import { SYSTEM_DIRS } from '../../src/process/trusted-path';
import { runtimeCall } from '../helpers/agent';
import type { TestApi } from '../helpers/api';
import { eventually } from '../helpers/eventually';
import type { GitHttpsServer } from '../helpers/git-https-server';
import { startIsolatedSandboxPair, type IsolatedSandboxPair, type Who } from '../helpers/isolated-sandbox-pair';
import { distPath } from '../helpers/run';
import { agentUrl, waitForSandbox } from '../helpers/sandboxes';

describe('the doors out of an isolated process sandbox are shut', () => {
  const first = 4_500_000 + Math.floor(Math.random() * 400) * 1000;
  const range: [number, number] = [first, first + 999];
  const gitToken = `gtok_${randomBytes(12).toString('hex')}`;
  const originalPath = process.env.PATH;
  let pair: IsolatedSandboxPair | undefined;
  let dataDir: string;
  let plant: string;
  let openDir: string; // a directory every user may write, beyond the usual temporary ones
  let git: GitHttpsServer;
  let llm: ScriptedLlm;
  let t: TestApi;
  let users: IsolatedSandboxPair['users'];
  let boxes: IsolatedSandboxPair['boxes'];

  const bash = async (who: Who, command: string, timeout = 20) => {
    const r = await runtimeCall(boxes[who].rt, 'POST', '/api/bash/execute_bash_command', { command, timeout });
    expect(r.status).toBe(200);
    return r.body as { exit_code: number; output: string };
  };
  const planted = () => fs.readdirSync(plant).filter((f) => f.startsWith('ran-'));

  beforeAll(async () => {
    pair = await startIsolatedSandboxPair(range, gitToken);
    ({ t, dataDir, plant, openDir, git, llm, users, boxes } = pair);
  }, 90_000);

  afterAll(async () => {
    await pair?.close();
  });

  it('1. programs run as root and in sandboxes come from root-owned directories, never from a PATH another user can write', async () => {
    // Both sandboxes started (iptables, unshare, mount, setpriv, mkdir as root) with the plant first on PATH.
    const a = boxes.a;
    const seen = await bash('a', 'echo "$PATH"; command -v git bash node; git --version');
    expect(seen.exit_code).toBe(0);
    expect(seen.output).not.toContain(plant);
    expect(
      seen.output
        .split('\n')[0]!
        .split(':')
        .every((d) => (SYSTEM_DIRS as readonly string[]).includes(d) || d === path.dirname(process.execPath)),
    ).toBe(true);
    // A's git views (git run by A's runtime) and a delete (kill run as A's uid) use the same programs.
    fs.writeFileSync(path.join(a.dir, 'workspace', 'x.txt'), 'x\n');
    await bash('a', 'git init -q . && git add x.txt');
    expect(
      (await runtimeCall(a.rt, 'GET', `/api/git/changes/${encodeURIComponent(path.join(a.dir, 'workspace'))}`)).status,
    ).toBeLessThan(500);
    expect(planted()).toEqual([]);

    // The launcher, as root, refuses a PATH with a directory others can write; the scripts npm runs drop it first.
    const open = fs.mkdtempSync('/var/lib/agent-control-escapes-open-');
    fs.chmodSync(open, 0o777);
    try {
      const refused = spawnSync(process.execPath, [distPath('scripts', 'launch.js')], {
        env: { ...process.env, PATH: `${open}:${originalPath}`, DATA_DIR: path.join(dataDir, 'launcher') },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(
        `refusing to run as root with directories on PATH that another user can write: ${open}`,
      );
      const kept = execFileSync('/bin/bash', ['-c', 'source scripts/trusted-path.sh; printf %s "$PATH"'], {
        env: { PATH: `${open}:${plant}:/usr/bin:/bin` },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'], // a socket as stdin makes bash read ~/.bashrc (it takes itself for a remote shell)
      });
      expect(kept).toBe('/usr/bin:/bin');
      const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
      expect(Object.entries(pkg.scripts).filter(([, run]) => !run.startsWith('/bin/bash scripts/'))).toEqual([]);
    } finally {
      fs.rmSync(open, { recursive: true, force: true });
    }
  });

  it("2. A's git token is never on a command line, and B sees no process but its own while A clones", async () => {
    const b = boxes.b;
    // B reads every command line it can see, as fast as it can, until told to stop.
    await bash(
      'b',
      `(while [ ! -e stop ]; do for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < "$f"; echo; done >> seen.txt 2>/dev/null; done) > /dev/null 2>&1 &`,
    );
    await bash('b', `for p in /proc/[0-9]*; do stat -c %u "$p"; done | sort -u > uids.txt`);
    expect(
      await t.request('POST', '/api/v1/secrets/git-providers', {
        key: users.a.key,
        body: { provider_tokens: { git_host_a: { token: gitToken } } },
      }),
    ).toMatchObject({ status: 200 });
    await t.setOrgLlm(users.a.key, { model: 'scripted-model', base_url: llm.url });
    const res = await fetch(`${t.url}/api/v1/app-conversations/stream-start`, {
      method: 'POST',
      headers: { 'X-Access-Token': users.a.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        selected_repository: 'acme/private',
        git_provider: 'git_host_a',
        sandbox_id: boxes.a.s.id,
      }),
    });
    const statuses = (await res.json()) as any[];
    fs.writeFileSync(path.join(b.dir, 'workspace', 'stop'), '');
    expect(statuses.at(-1)).toMatchObject({ status: 'READY' });
    expect(git.requests.some((r) => r.authorized)).toBe(true);
    const clone = path.join(boxes.a.dir, 'workspace', 'private');
    expect(fs.readFileSync(path.join(clone, 'README.md'), 'utf8')).toBe('# private\n');
    // Nothing of the token stays in A's workspace or the repository's config.
    expect(
      fs.readdirSync(path.join(boxes.a.dir, 'workspace')).filter((f) => f.startsWith('.agent-control-credential-')),
    ).toEqual([]);
    expect(fs.readFileSync(path.join(clone, '.git', 'config'), 'utf8')).not.toContain(gitToken);

    const seen = fs.readFileSync(path.join(b.dir, 'workspace', 'seen.txt'), 'utf8');
    expect(seen.split('\n').length).toBeGreaterThan(10); // the poller ran
    expect(seen).not.toContain(gitToken);
    expect(seen).not.toContain('acme/private');
    expect(fs.readFileSync(path.join(b.dir, 'workspace', 'uids.txt'), 'utf8').trim()).toBe(String(b.uid));
  });

  /** A listener in B on host:port that writes down every connection it accepts. */
  const listenInB = async (host: string, port: number, file: string) => {
    const script = `const fs=require('fs');const bind=()=>{const s=require('net').createServer(c=>{fs.appendFileSync('${file}','accepted\\n');c.on('data',d=>fs.appendFileSync('${file}',d))});s.on('error',()=>setTimeout(bind,5));s.listen(${port},'${host}',()=>fs.appendFileSync('${file}','listening\\n'))};bind()`;
    await bash('b', `setsid node -e "${script}" > /dev/null 2>&1 &`);
    await eventually(
      () =>
        fs.existsSync(path.join(boxes.b.dir, 'workspace', file)) &&
        fs.readFileSync(path.join(boxes.b.dir, 'workspace', file), 'utf8').includes('listening'),
      {
        what: `B listening on ${host}:${port}`,
        timeoutMs: 10_000,
        intervalMs: 20,
      },
    );
  };
  /** Connects and sends a request with a key: 'connected' or why not. */
  const tryKey = (host: string, port: number) =>
    new Promise<string>((resolve) => {
      const s = net.connect({ host, port });
      s.setTimeout(2000, () => (s.destroy(), resolve('timeout')));
      s.on('connect', () => {
        s.end('GET /api/v1/users/me HTTP/1.1\r\nHost: x\r\nX-Access-Token: acp_secret_of_a\r\n\r\n');
        resolve('connected');
      });
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });

  it("3. B's listener on a service port answers no one: [::1] beside the api, and 127.0.0.1 after the api died; the port is taken back", async () => {
    const port = t.config.api.port;
    const hasIpv6 =
      fs.existsSync('/proc/net/if_inet6') &&
      fs.readFileSync('/proc/net/if_inet6', 'utf8').includes('00000000000000000000000000000001');
    if (hasIpv6) {
      await listenInB('::1', port, 'v6.txt');
      expect(await tryKey('::1', port)).not.toBe('connected');
      expect(fs.readFileSync(path.join(boxes.b.dir, 'workspace', 'v6.txt'), 'utf8')).toBe('listening\n');
    }
    // The api dies; B binds its port first (it retries every 5 ms).
    await t.api.close();
    await listenInB('127.0.0.1', port, 'v4.txt');
    expect(await tryKey('127.0.0.1', port)).not.toBe('connected');
    expect(fs.readFileSync(path.join(boxes.b.dir, 'workspace', 'v4.txt'), 'utf8')).toBe('listening\n');
    // What the launcher does before each (re)start of a child on a fixed port: B's processes end, the api binds again.
    expect(await reclaimPort(port, range)).toEqual([boxes.b.uid]);
    expect(await processesOfUser(boxes.b.uid)).toEqual([]);
    t.api = await startApiServer(
      t.config,
      { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! },
      pino({ level: 'silent' }),
    );
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
  });

  it('4. a FIFO or link where the worker used to read the runtime port does not stop the worker', async () => {
    const b = boxes.b;
    // B is broken from test 3 (its processes were killed): once its workflow sees it, resumed, it starts again.
    const restart = async () => {
      const before = boxes.b.rt.url;
      await waitForSandbox(t, users.b.key, b.s.id, (s) => s.status === 'ERROR' || s.status === 'MISSING', 60_000);
      await t.request('POST', `/api/v1/sandboxes/${b.s.id}/resume`, { key: users.b.key });
      const running = await waitForSandbox(
        t,
        users.b.key,
        b.s.id,
        (s) => s.status === 'RUNNING' && agentUrl(s) !== before,
        60_000,
      );
      boxes.b.rt = { url: agentUrl(running), key: running.session_api_key, sandboxId: b.s.id };
      return running;
    };
    await restart();
    // A daemon of B keeps FIFOs where the port file was, and a link to one in its home.
    await bash(
      'b',
      `setsid sh -c 'while :; do [ -p /tmp/.runtime-port ] || { rm -f /tmp/.runtime-port; mkfifo /tmp/.runtime-port; }; ln -sf /tmp/.runtime-port "$HOME/.runtime-port" 2>/dev/null; sleep 0.01; done' > /dev/null 2>&1 &`,
    );
    await eventually(
      () => fs.statSync(path.join(b.dir, 'tmp', '.runtime-port'), { throwIfNoEntry: false })?.isFIFO() ?? false,
      { what: 'the FIFO', timeoutMs: 5000, intervalMs: 20 },
    );
    // B's runtime dies; the resume starts a new one, which must report its port through its pipe.
    const pid = (JSON.parse(fs.readFileSync(path.join(b.dir, 'runtime.json'), 'utf8')) as { pid: number }).pid;
    process.kill(pid, 'SIGKILL');
    await eventually(() => !readStat(pid) || readStat(pid)!.state === 'Z', {
      what: 'the runtime gone',
      timeoutMs: 5000,
      intervalMs: 20,
    });
    const again = await restart();
    expect(again.exposed_urls[0].port).toBeGreaterThan(0);
    // The worker serves everyone meanwhile: A pauses and resumes.
    expect(
      (await t.request('POST', `/api/v1/sandboxes/${boxes.a.s.id}/pause`, { key: users.a.key })).body,
    ).toMatchObject({ status: 'PAUSED' });
    expect(
      (await t.request('POST', `/api/v1/sandboxes/${boxes.a.s.id}/resume`, { key: users.a.key })).body,
    ).toMatchObject({ status: 'RUNNING' });
  }, 120_000);

  it('5. what B leaves in the shared temporary directories and SysV IPC is its own, and goes with it', async () => {
    const b = boxes.b;
    const made = await bash(
      'b',
      `for d in /tmp /var/tmp /dev/shm /run/lock ${openDir}; do echo left > "$d/left-by-b"; done; ipcmk -M 4096 && ipcmk -Q && ipcmk -S 1`,
    );
    expect(made.exit_code).toBe(0);
    // A does not see them: its temporary directories are its own too.
    expect(
      (await bash('a', `cat /tmp/left-by-b /var/tmp/left-by-b /dev/shm/left-by-b ${openDir}/left-by-b 2>&1; ipcs`))
        .output,
    ).not.toMatch(/^left$/m);
    const ipcOf = (uid: number) =>
      ['shm', 'msg', 'sem'].flatMap((k) =>
        fs
          .readFileSync(`/proc/sysvipc/${k}`, 'utf8')
          .split('\n')
          .slice(1)
          .filter((l) => l.trim().split(/\s+/)[{ shm: 7, msg: 7, sem: 4 }[k]!] === String(uid)),
      );
    const ownedBy = (uid: number) =>
      ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', openDir]
        .filter((d) => fs.existsSync(d))
        .flatMap((d) =>
          fs
            .readdirSync(d)
            .map((f) => path.join(d, f))
            .filter((f) => fs.lstatSync(f).uid === uid),
        );
    expect(ownedBy(b.uid)).toEqual([]);
    expect(ipcOf(b.uid)).toEqual([]);
    const deleted = await t.request('DELETE', `/api/v1/sandboxes/${b.s.id}`, { key: users.b.key });
    expect(deleted.body.status).toBe('DELETED');
    expect(await processesOfUser(b.uid)).toEqual([]);
    expect(ownedBy(b.uid)).toEqual([]);
    expect(ipcOf(b.uid)).toEqual([]);
    expect(fs.existsSync(b.dir)).toBe(false);
    expect(planted()).toEqual([]);
  });
});
