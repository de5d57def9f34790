/**
 * The README's first command as a new user runs it, as root (issue 49): `npm start -- --demo` on a new
 * DATA_DIR, so its isolated sandboxes get a new root (/var/lib/agent-control/<hash>) with disks and
 * cgroups on, plays the demo to its last event; and `npm run admin -- demo` plays it against an
 * `npm start` that was not given `--demo`. Each run's sandbox is deleted through the api (its processes,
 * disk and loop device go), then Ctrl-C stops the launcher. Runs only as root (jest.config.js).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { removeSandboxFirewall } from '../../activities/sandbox-providers/process-firewall';
import { loadConfig } from '../../src/config';
import { eventually } from '../helpers/eventually';
import { alive, freeLauncherPorts, Launcher, type Launch } from '../helpers/launcher';
import { distPath, runNode } from '../helpers/run';
import { testEnv } from '../helpers/env';
import { mountsUnder } from '../helpers/sandboxes';

/** The build that `npm start` would otherwise make again (scripts/start.sh): must be npm test's, not stale. */
function buildIsCurrent(): void {
  const repo = path.resolve(__dirname, '..', '..');
  const newer = execFileSync(
    'find',
    [
      'src',
      'workflows',
      'activities',
      'worker',
      'scripts',
      'bench',
      'package-lock.json',
      '-newer',
      'dist/workflow-bundle.js',
      '-print',
      '-quit',
    ],
    { cwd: repo, encoding: 'utf8' },
  ).trim();
  if (newer) throw new Error(`${newer} is newer than the build: npm start would build again while tests run`);
}

describe.each([
  ['npm start -- --demo', true],
  ['npm start, then npm run admin -- demo', false],
])('%s on a new DATA_DIR, as root, reaches the demo’s last event', (_name, withDemo) => {
  const first = 4_200_000 + Math.floor(Math.random() * 300) * 1000;
  const range: [number, number] = [first, first + 999];
  let dataDir: string;
  let sandboxesRoot: string;
  let launcher: Launcher;
  let l: Launch | undefined;

  beforeAll(async () => {
    buildIsCurrent();
    dataDir = fs.mkdtempSync(path.join(testEnv().dir, 'first-command-'));
    fs.rmdirSync(dataDir); // new: the launcher makes it
    sandboxesRoot = path.dirname(loadConfig({ DATA_DIR: dataDir, SANDBOX_PROCESS_ISOLATION: 'user' }).sandboxes.dir);
    expect(fs.existsSync(sandboxesRoot)).toBe(false);
    launcher = new Launcher(dataDir, await freeLauncherPorts(), {
      // What a user's machine has: isolation, disks and cgroups as root decides (the helper turns them off).
      SANDBOX_PROCESS_ISOLATION: '',
      SANDBOX_DISKS: '',
      // A range of this file's own: its firewall chain is removed at the end.
      SANDBOX_UID_RANGE: `${range[0]}-${range[1]}`,
      SANDBOX_IDLE_TIMEOUT_MS: '0',
    });
  });

  afterAll(async () => {
    if (l) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([launcher.interrupt(l), new Promise((r) => (timer = setTimeout(r, 30_000)))]);
      clearTimeout(timer);
    }
    launcher?.killAll();
    for (const at of sandboxesRoot ? mountsUnder(sandboxesRoot) : []) execFileSync('umount', ['-l', at]);
    await removeSandboxFirewall(range);
    if (sandboxesRoot) fs.rmSync(sandboxesRoot, { recursive: true, force: true });
    try {
      fs.rmdirSync(path.dirname(sandboxesRoot)); // only when empty: another installation may live there
    } catch {
      // not empty, or gone
    }
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('plays every event, then deletes its sandbox and stops on Ctrl-C', async () => {
    l = launcher.launch(withDemo ? ['--demo'] : [], true);
    await launcher.waitUp(l);
    const adminKey = /Admin API key[^\n]*\n\s*(acp_\S+)/.exec(l.output())?.[1];
    expect(adminKey).toMatch(/^acp_/);

    let demoOut: string;
    if (withDemo) {
      await eventually(
        () => {
          if (!/\[demo\] (finished|error|timed out):|the demo failed/.test(l!.output()) && l!.child.exitCode === null)
            throw new Error(`the demo has not ended:\n${l!.output().slice(-3000)}`);
        },
        { timeoutMs: 180_000, intervalMs: 250 },
      );
      demoOut = l.output();
      expect(demoOut).not.toContain('the demo failed');
    } else {
      const r = await runNode(
        distPath('src', 'cli', 'admin.js'),
        ['demo'],
        {
          DATA_DIR: dataDir,
          API_PORT: String(launcher.ports.api),
          PUBLIC_BASE_URL: '',
          MONGODB_URI: '',
          TEMPORAL_ADDRESS: '',
          DEMO_LLM_PORT: '',
          LOG_LEVEL: 'silent',
        },
        180_000,
      );
      demoOut = r.stdout + r.stderr;
      expect({ code: r.code, output: r.code === 0 ? '' : demoOut.slice(-1500) }).toEqual({ code: 0, output: '' });
    }
    // The demo's last event: the conversation's end, as the live websocket sent it.
    expect(demoOut).toMatch(/ConversationStateUpdateEvent\s+execution_status = "finished"/);
    expect(demoOut).toMatch(/\[demo\] finished: \d+ events, stored in the log/);

    // Its sandbox ran isolated, in the new root, on a disk of its own; deleted, nothing of it stays.
    const sandboxId = /\[demo\] sandbox (\S+) starting/.exec(demoOut)?.[1];
    expect(sandboxId).toBeDefined();
    const sandboxes = path.join(sandboxesRoot, 'sandboxes');
    expect(mountsUnder(sandboxesRoot)).toEqual([path.join(sandboxes, sandboxId!)]);
    expect((fs.statSync(sandboxesRoot).mode & 0o777).toString(8)).toBe('711');
    const deleted = await launcher.api(`/api/v1/sandboxes/${sandboxId}`, adminKey, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    await eventually(() => expect(mountsUnder(sandboxesRoot)).toEqual([]));
    expect(fs.readdirSync(path.join(sandboxesRoot, 'disks'))).toEqual([]);

    // Ctrl-C: npm, its shell and the launcher get SIGINT; the launcher stops every server it started.
    const pids = launcher.pids();
    expect(pids.length).toBeGreaterThanOrEqual(5);
    await launcher.interrupt(l);
    expect(l.output()).toContain('SIGINT: stopping');
    await eventually(() => expect(pids.filter(alive)).toEqual([]), { timeoutMs: 30_000 });
  }, 400_000);
});
