/**
 * A fresh machine, as root (issue 49): an isolated installation whose SANDBOXES_DIR and the directories
 * above it, up to /var/lib, do not exist yet, with disks on, so the first step to make a directory there
 * is the disk's (`<root>/disks`, 0700), before the isolation's, and the worker's umask is 077. A process
 * sandbox starts on each runtime, the tree has its modes, the runtime runs as the sandbox's uid on the
 * sandbox's own file system, and a delete leaves no mount and no image. Runs only as root (jest.config.js).
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { removeSandboxFirewall } from '../../activities/sandbox-providers/process-firewall';
import { runtimeCall, runtimeOf } from '../helpers/agent';
import type { TestApi } from '../helpers/api';
import { eventually } from '../helpers/eventually';
import { mountsUnder, waitForSandbox } from '../helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from '../helpers/service';

const mode = (p: string) => (fs.statSync(p).mode & 0o7777).toString(8);

describe.each([
  ['built-in', 'local-process'],
  ['openhands', 'local-process-openhands'],
])('a fresh machine as root: the first process sandbox on the %s runtime', (_runtime, specId) => {
  // Nothing of it exists: the worker makes every directory from /var/lib down.
  const base = `/var/lib/agent-control-fresh-${randomBytes(4).toString('hex')}`;
  const root = path.join(base, 'install');
  const sandboxesDir = path.join(root, 'sandboxes');
  // A range of this file's own (outside the default and the other root suites' ranges): its firewall chain ends here.
  const first = 4_100_000 + Math.floor(Math.random() * 300) * 1000;
  const range: [number, number] = [first, first + 999];
  let service: ServiceUnderTest;
  let t: TestApi;
  let umask: number;

  beforeAll(async () => {
    expect(fs.existsSync(base)).toBe(false);
    // A root shell's strict umask: every mode the worker needs is set, not left to what mkdir or open give.
    umask = process.umask(0o077);
    service = await startServiceUnderTest(
      '/var/lib/agent-control-fresh-data-',
      {
        SANDBOX_PROCESS_ISOLATION: 'user',
        SANDBOX_UID_RANGE: `${range[0]}-${range[1]}`,
        SANDBOXES_DIR: sandboxesDir,
        SANDBOX_DISKS: 'on',
        SANDBOX_DEFAULT_DISK_MB: '256',
        SANDBOX_IDLE_TIMEOUT_MS: '0',
      },
      {
        beforeRemove: async () => {
          for (const at of mountsUnder(base)) execFileSync('umount', ['-l', at]);
          await removeSandboxFirewall(range);
        },
      },
    );
    t = service.t;
  }, 60_000);

  afterAll(async () => {
    await service?.close();
    process.umask(umask);
    fs.rmSync(base, { recursive: true, force: true });
  });

  it('starts RUNNING with every directory of the tree in its mode, and a delete leaves no mount or image', async () => {
    const user = await t.newUser();
    const created = await t.request('POST', '/api/v1/sandboxes', { key: user.key, body: { sandbox_spec_id: specId } });
    const s = await waitForSandbox(
      t,
      user.key,
      created.body.id,
      (x) => ['RUNNING', 'ERROR'].includes(x.status),
      240_000,
    );
    expect({ status: s.status, detail: s.status === 'RUNNING' ? null : s.status_detail }).toEqual({
      status: 'RUNNING',
      detail: null,
    });
    const dir = path.join(sandboxesDir, s.id);
    expect({
      base: mode(base),
      root: mode(root),
      sandboxes: mode(sandboxesDir),
      runtime: mode(path.join(root, 'runtime')),
      disks: mode(path.join(root, 'disks')),
      sandbox: mode(dir),
    }).toEqual({ base: '711', root: '711', sandboxes: '711', runtime: '711', disks: '700', sandbox: '711' });
    expect(mountsUnder(base)).toEqual([dir]);

    // The runtime answers as the sandbox's uid, in a workspace on its own file system.
    const r = await runtimeCall(runtimeOf(s), 'POST', '/api/bash/execute_bash_command', {
      command: 'id -u; df -m . | tail -1',
      timeout: 20,
    });
    expect(r.status).toBe(200);
    const b = r.body as { output?: string; stdout?: string | null };
    const [uid, df] = (b.output ?? b.stdout ?? '').trim().split('\n');
    expect(Number(uid)).toBeGreaterThanOrEqual(range[0]);
    expect(Number(uid)).toBeLessThanOrEqual(range[1]);
    expect(Number(df!.trim().split(/\s+/)[1])).toBeLessThanOrEqual(256);

    expect((await t.request('DELETE', `/api/v1/sandboxes/${s.id}`, { key: user.key })).status).toBe(200);
    await eventually(async () => {
      expect(mountsUnder(base)).toEqual([]);
      expect(fs.readdirSync(path.join(root, 'disks'))).toEqual([]);
    });
  }, 300_000);
});
