/**
 * Process sandboxes isolated as root (SANDBOX_PROCESS_ISOLATION=user): two users' sandboxes, and from
 * user B's runtime (its bash endpoint and its agent) every attempt on user A's directory, DATA_DIR, the
 * secrets key, the database files and ports, Temporal and A's runtime fails, while what B may reach
 * (its own workspace, the api, an allowed local LLM) works. The same on each runtime: the built-in one
 * and the real OpenHands agent server. Runs only as root (jest.config.js).
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { chainName, removeSandboxFirewall } from '../../activities/sandbox-providers/process-firewall';
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import { processesOfUser, signalAll } from '../../src/process/process-tree';
import { runtimeClient } from '../../src/sandboxes/runtime-clients';
import { loggedEvents, runtimeCall, runtimeOf, type Runtime } from '../helpers/agent';
import { eventually } from '../helpers/eventually';
import type { TestApi } from '../helpers/api';
import { testEnv } from '../helpers/env';
import { runningSandbox, waitForStatus } from '../helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from '../helpers/service';

/** The port of a URL, or of a bare host:port. */
const portOf = (address: string) => Number(new URL(address.includes('://') ? address : `tcp://${address}`).port);

describe.each([
  ['built-in', 'local-process'],
  ['openhands', 'local-process-openhands'],
])('process sandboxes isolated by uid and firewall, on the %s runtime', (_runtime, specId) => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let dataDir: string;
  let llm: ScriptedLlm;
  // A range of this file's own, so the firewall chain is this run's and is removed at the end. Outside
  // the default SANDBOX_UID_RANGE (3000000-3999999): an installation started on this machine (`npm start`
  // as root) keeps its chain for that range, and its jump, matched first, would refuse this file's uids
  // the api and the LLM that only this file's chain allows (a CI run failed so).
  const first = 4_500_000 + Math.floor(Math.random() * 400) * 1000;
  const range: [number, number] = [first, first + 999];
  const sandboxes: Record<'a' | 'b', { s: any; rt: Runtime; dir: string; uid: number }> = {} as any;
  let users: Record<'a' | 'b', { userId: string; key: string }>;

  /** A command through the runtime's own bash endpoint (the built-in runtime answers `output`, the agent server stdout and stderr). */
  const bash = (who: 'a' | 'b', command: string) =>
    runtimeCall(sandboxes[who].rt, 'POST', '/api/bash/execute_bash_command', { command, timeout: 20 }).then((r) => {
      expect(r.status).toBe(200);
      const b = r.body as { exit_code: number; output?: string; stdout?: string | null; stderr?: string | null };
      return { exit_code: b.exit_code, output: b.output ?? `${b.stdout ?? ''}${b.stderr ?? ''}` };
    });
  /** A TCP connection from inside B: "connected" or the error code. */
  const probe = async (port: number, host = '127.0.0.1') =>
    (
      await bash(
        'b',
        `node -e "const s=require('net').connect(${port},'${host}');s.setTimeout(3000,()=>{console.log('TIMEOUT');process.exit(0)});s.on('connect',()=>{console.log('connected');process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)})"`,
      )
    ).output.trim();

  beforeAll(async () => {
    // Not under /tmp: a sandbox has a /tmp of its own, and would not see this one at all. The fixture's
    // close() ends the runtimes under SANDBOXES_DIR (elsewhere, isolated); the uids and the firewall go here.
    service = await startServiceUnderTest(
      '/var/lib/agent-control-isolation-',
      async (dir) => {
        // What `npm start` keeps in DATA_DIR: the secrets key and the database's files.
        fs.writeFileSync(path.join(dir, 'secrets.key'), 'k'.repeat(44), { mode: 0o600 });
        fs.mkdirSync(path.join(dir, 'postgres'), { mode: 0o755 });
        fs.writeFileSync(path.join(dir, 'postgres', 'pg_hba.conf'), 'host all all 127.0.0.1/32 scram-sha-256\n', {
          mode: 0o644,
        });
        llm = await new ScriptedLlm([
          {
            tool_calls: [{ name: 'terminal', arguments: { command: `cat ${dir}/secrets.key; ls ${dir}/sandboxes` } }],
          },
          { tool_calls: [{ name: 'finish', arguments: { message: 'done' } }] },
        ]).start();
        // API_PORT (the fixture's free port): the runtimes report there, through the firewall's one opening.
        return {
          SANDBOX_PROCESS_ISOLATION: 'user',
          SANDBOX_UID_RANGE: `${range[0]}-${range[1]}`,
          SANDBOX_LOCAL_ALLOW: new URL(llm.url).host,
          SANDBOX_IDLE_TIMEOUT_MS: '0',
        };
      },
      {
        beforeRemove: async () => {
          for (const { uid } of Object.values(sandboxes)) signalAll(await processesOfUser(uid), 'SIGKILL');
          await removeSandboxFirewall(range);
        },
      },
    );
    ({ t, dataDir } = service);
    users = { a: await t.newUser(), b: await t.newUser() };
    for (const who of ['a', 'b'] as const) {
      const s = await runningSandbox(t, users[who].key, { sandbox_spec_id: specId }, 120_000);
      const dir = path.join(t.config.sandboxes.dir, s.id);
      sandboxes[who] = { s, rt: runtimeOf(s), dir, uid: fs.statSync(path.join(dir, 'home')).uid };
    }
  }, 300_000);

  afterAll(async () => {
    await service?.close();
    await llm?.close();
    if (t) fs.rmSync(path.dirname(t.config.sandboxes.dir), { recursive: true, force: true });
    try {
      fs.rmdirSync('/var/lib/agent-control'); // only when empty: another installation may live there
    } catch {
      // not empty, or gone
    }
  });

  it('runs each sandbox as a uid of its own from the range, its directories private to it, outside DATA_DIR', async () => {
    const { a, b } = sandboxes;
    expect(t.config.sandboxes.dir.startsWith('/var/lib/agent-control/')).toBe(true);
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(a.uid).not.toBe(b.uid);
    for (const x of [a, b]) {
      expect(x.uid).toBeGreaterThanOrEqual(range[0]);
      expect(x.uid).toBeLessThanOrEqual(range[1]);
      expect(fs.statSync(path.join(x.dir, 'workspace'))).toMatchObject({ uid: x.uid, mode: expect.any(Number) });
      expect(fs.statSync(path.join(x.dir, 'workspace')).mode & 0o777).toBe(0o700);
      expect(fs.statSync(x.dir).uid).toBe(0); // the handle and log beside it stay root's
    }
    expect((await bash('b', 'id -u')).output.trim()).toBe(String(b.uid));
    expect(
      (await bash('b', 'echo mine > note.txt && cat note.txt && stat -c %a note.txt')).output.trim().split('\n'),
    ).toEqual(['mine', '600']);
    // What runtimes run from (the built-in bundle, the agent server's Python environment) is read-only to them.
    const runtimeDir = path.join(path.dirname(t.config.sandboxes.dir), 'runtime');
    const shared = fs.readdirSync(runtimeDir).map((name) => path.join(runtimeDir, name));
    if (specId === 'local-process-openhands')
      expect(shared.some((p) => path.basename(p).startsWith('openhands-agent-server-'))).toBe(true);
    for (const target of [runtimeDir, ...shared]) {
      const into = fs.statSync(target).isDirectory() ? path.join(target, 'planted') : target;
      const r = await bash('b', `echo x >> ${into}`);
      expect({ into, exit: r.exit_code !== 0, output: r.output }).toEqual({
        into,
        exit: true,
        output: expect.stringContaining('Permission denied'),
      });
    }
  });

  it("refuses B every file that is not its own: A's directory, DATA_DIR, the secrets key, the database's files", async () => {
    const a = sandboxes.a;
    fs.writeFileSync(path.join(a.dir, 'workspace', 'secret.txt'), 'of A\n');
    for (const target of [
      `ls ${a.dir}/workspace`,
      `cat ${a.dir}/workspace/secret.txt`,
      `ls ${a.dir}/conversations`,
      `cat ${a.dir}/runtime.json`,
      `ls ${dataDir}`,
      `cat ${dataDir}/secrets.key`,
      `cat ${dataDir}/postgres/pg_hba.conf`,
      `ls ${dataDir}/sandbox-uids`,
    ]) {
      const r = await bash('b', target);
      expect({ target, exit: r.exit_code !== 0, output: r.output }).toEqual({
        target,
        exit: true,
        output: expect.stringContaining('Permission denied'),
      });
    }
    // Another uid's processes are not even there (a /proc with hidepid).
    const r = await bash(
      'b',
      `cat /proc/${(JSON.parse(fs.readFileSync(path.join(a.dir, 'runtime.json'), 'utf8')) as { pid: number }).pid}/environ`,
    );
    expect({ exit: r.exit_code !== 0, output: r.output }).toEqual({
      exit: true,
      output: expect.stringContaining('No such file or directory'),
    });
  });

  it("refuses B broadcast and multicast to the machine's listeners and link-local addresses", async () => {
    const udp = async (host: string) =>
      (
        await bash(
          'b',
          `node -e "const s=require('dgram').createSocket('${host.includes(':') ? 'udp6' : 'udp4'}');s.bind(()=>{s.setBroadcast(true);s.send('x',9999,'${host}',e=>{console.log(e?e.code:'sent');process.exit(0)})})"`,
        )
      ).output.trim();
    expect(await udp('127.255.255.255')).toBe('EPERM');
    expect(await udp('255.255.255.255')).toBe('EPERM');
    expect(await udp('ff02::1')).toBe('EPERM');
    expect(await probe(80, '169.254.169.254')).toBe('ECONNREFUSED');
  });

  it("refuses B connections to the database, Temporal and A's runtime; the api and the allowed LLM answer", async () => {
    const env = testEnv();
    expect(await probe(portOf(env.mongoUri))).toBe('ECONNREFUSED');
    expect(await probe(portOf(env.temporalAddress))).toBe('ECONNREFUSED');
    if (env.postgresUrl) expect(await probe(Number(new URL(env.postgresUrl).port))).toBe('ECONNREFUSED');
    expect(await probe(sandboxes.a.s.exposed_urls[0].port)).toBe('ECONNREFUSED');
    expect(await probe(sandboxes.b.s.exposed_urls[0].port)).toBe('ECONNREFUSED'); // its own runtime too: only replies pass
    // The same probe reaches what B is allowed: the controls that the refusals above are the firewall's.
    expect(await probe(portOf(t.api.url))).toBe('connected');
    expect(await probe(portOf(llm.url))).toBe('connected');
    expect(execFileSync('iptables', ['-S', 'OUTPUT'], { encoding: 'utf8' })).toContain(`-j ${chainName(range)}`);
  });

  it("B's agent, running commands through its LLM, meets the same refusals; its key is not in their environment", async () => {
    const b = sandboxes.b;
    const c = await t.conversations.create({ userId: users.b.userId, sandboxId: b.s.id, sessionApiKey: b.rt.key });
    const record = (await t.stores.sandboxes.get(b.s.id))!;
    const created = await runtimeClient(record, t.box).createConversation(
      {
        id: c.id,
        llm: {
          model: 'scripted-model',
          base_url: llm.url,
          api_key: 'sk-test',
          temperature: null,
          top_p: null,
          max_output_tokens: null,
          stream: false,
          log_completions: false,
        },
        systemMessageSuffix: null,
        workingDir: '.',
        initialMessage: {
          role: 'user',
          content: [{ type: 'text', text: 'Look around.', cache_prompt: false }],
          run: true,
        },
        maxIterations: 10,
        confirmationMode: false,
        secrets: {},
        skills: [],
      },
      60_000,
    );
    expect(created).toEqual({ created: true });
    // What the agent's command saw, as the runtime reported it to the control plane through the firewall.
    const observation = await eventually(
      async () => {
        const seen = (await loggedEvents(t, users.b.key, c.id)).find((e) => e.kind === 'ObservationEvent');
        expect(seen).toBeDefined();
        return JSON.stringify(seen);
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(observation).toContain(`${dataDir}/secrets.key: Permission denied`);
    expect(observation).toContain(`${dataDir}/sandboxes': Permission denied`);
    expect((await bash('b', 'env | grep -c SESSION_API_KEY || true')).output.trim()).toBe('0');
  });

  it("deleting B ends everything running as its uid (a daemon that left the runtime's tree, one that keeps forking) and frees the uid", async () => {
    const b = sandboxes.b;
    await bash('b', 'setsid nohup sleep 600 > /dev/null 2>&1 &');
    // A process that forks and exits in a loop is never where a list of pids says it is.
    await bash(
      'b',
      `setsid perl -e '$t=time; while(time-$t<20){ exit if fork } exec "sleep","300"' > /dev/null 2>&1 &`,
    );
    expect((await processesOfUser(b.uid)).length).toBeGreaterThanOrEqual(2);
    const deleted = await t.request('DELETE', `/api/v1/sandboxes/${b.s.id}`, { key: users.b.key });
    // 202: the deletion was still ending B's processes at the answer deadline; it is done once DELETED.
    if (deleted.status === 202) await waitForStatus(t, users.b.key, b.s.id, 'DELETED', 60_000);
    else expect(deleted.body.status).toBe('DELETED');
    expect(await processesOfUser(b.uid)).toEqual([]);
    expect(fs.existsSync(b.dir)).toBe(false);
    expect(fs.existsSync(path.join(dataDir, 'sandbox-uids', String(b.uid)))).toBe(false);
    expect(fs.readFileSync(path.join(dataDir, 'sandbox-uids', String(sandboxes.a.uid)), 'utf8')).toBe(sandboxes.a.s.id);
  });
});
