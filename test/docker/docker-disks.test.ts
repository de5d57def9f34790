/**
 * A docker sandbox's workspace on a file system of its own (SANDBOX_DISKS, an engine on this host): the
 * volume binds the sandbox's ext4 image, so a filler in the container gets "No space left on device" at
 * its `disk_mb` and the host keeps its disk; the runtime (uid 1000) owns its workspace as in a plain
 * volume; delete leaves no volume, mount, image or directory behind.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DockerProvider } from '../../activities/sandbox-providers/docker-provider';
import { SandboxDisks } from '../../activities/sandbox-providers/process-disks';
import { SandboxTree } from '../../activities/sandbox-providers/sandbox-tree';
import type { SandboxSpec } from '../../src/schemas/sandboxes';
import type { RuntimeHandle } from '../../src/store/runtime-handle';
import { runtimeCall } from '../helpers/agent';
import { dockerClient, removeSandboxContainers, runtimeSpec, volumeExists } from '../helpers/docker';
import { eventually } from '../helpers/eventually';
import { runtimeGet } from '../helpers/sandboxes';

// The docker tests run where the global setup started an engine: as root, so loop devices are there too.
describe('docker sandboxes on a disk of their own', () => {
  let root: string;
  let provider: DockerProvider;
  const sandboxId = `disk-${process.pid}`;
  let handle: RuntimeHandle | undefined;

  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'docker-disks-'));
    provider = new DockerProvider({
      docker: dockerClient(),
      publishHost: '127.0.0.1',
      disks: new SandboxDisks(new SandboxTree({ sandboxesDir: path.join(root, 'sandboxes') })),
    });
  });

  afterAll(async () => {
    if (handle) await provider.delete(sandboxId, handle).catch(() => undefined);
    await removeSandboxContainers([sandboxId]);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('a filler gets "No space left on device" at disk_mb; the runtime owns its workspace; delete leaves nothing', async () => {
    const spec = runtimeSpec({ disk_mb: 64 }) as SandboxSpec;
    const key = 'disk-test-session-key-0123456789';
    const started = await provider.start({
      sandboxId,
      spec,
      sessionApiKey: key,
      controlPlaneUrl: 'http://127.0.0.1:9',
    });
    handle = started.handle;
    const url = started.exposedUrls[0]!.url;
    await eventually(async () => expect((await runtimeGet(url, '/alive'))?.status).toBe(200), {
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    const bash = async (command: string) =>
      (await runtimeCall({ url, key, sandboxId }, 'POST', '/api/bash/execute_bash_command', { command })).body as {
        exit_code: number;
        output: string;
      };

    const dir = path.join(root, 'docker-workspaces', sandboxId);
    expect(fs.statSync(dir).dev).not.toBe(fs.statSync(path.dirname(dir)).dev); // a mount of its own
    const owner = await bash('id -u; stat -c %u .; df -m . | tail -1');
    expect(owner.output.split('\n').slice(0, 2)).toEqual(['1000', '1000']);

    const filled = await bash('head -c 200000000 /dev/zero > fill; echo "exit $?"; ls -l fill | cut -d" " -f5');
    expect(filled.output).toContain('No space left on device');
    expect(filled.output).toContain('exit 1');
    const written = Number(filled.output.trim().split('\n').at(-1));
    expect(written).toBeLessThan(64 * 1024 * 1024);
    // What the host gave it: the image's blocks, no more than its size.
    expect(fs.statSync(path.join(root, 'disks', `${sandboxId}.ext4`)).blocks * 512).toBeLessThan(80 * 1024 * 1024);

    await provider.delete(sandboxId, handle);
    handle = undefined;
    expect(await volumeExists(`agent-control-sandbox-${sandboxId}`)).toBe(false);
    expect(fs.readFileSync('/proc/self/mounts', 'utf8')).not.toContain(dir);
    expect(fs.existsSync(path.join(root, 'disks', `${sandboxId}.ext4`))).toBe(false);
    await eventually(() => expect(fs.existsSync(dir)).toBe(false), { timeoutMs: 5000, intervalMs: 100 });
  }, 120_000);
});
