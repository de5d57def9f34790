/**
 * The process provider's repeated start: whatever an earlier attempt left running for the same sandbox
 * is stopped before the new runtime is spawned, found by its file beside the runtime or, when a worker
 * died in the instant between the fork and that file, by the sandbox directory in its environment.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ProcessProvider } from '../activities/sandbox-providers/process-provider';
import { SandboxTree } from '../activities/sandbox-providers/sandbox-tree';
import { runtimesUnder, killRuntimesUnder } from './helpers/sandboxes';
import { eventually } from './helpers/eventually';
import { readStat } from '../src/process/process-tree';

const spec = {
  id: 'sleeper',
  // A runtime stand-in: a long-lived process with a child of its own (as a runtime's commands are).
  command: ['/bin/sh', '-c', 'sleep 600 & wait'],
  working_dir: 'workspace',
  initial_env: {},
} as never;

describe('process provider', () => {
  let root: string;
  let provider: ProcessProvider;

  beforeEach(() => {
    // Not ASCII: the environment is matched as the bytes the kernel keeps.
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'process-provider-é-'));
    provider = new ProcessProvider({ tree: new SandboxTree({ sandboxesDir: root }), runtimeEntry: '/nonexistent' });
  });

  afterEach(() => {
    killRuntimesUnder(root);
    fs.rmSync(root, { recursive: true, force: true });
  });

  const start = () =>
    provider.start({ sandboxId: 's1', spec, sessionApiKey: 'key', controlPlaneUrl: 'http://127.0.0.1:9' } as never);
  const dir = () => path.join(root, 's1');

  it('records the runtime beside it, and a second start replaces the first runtime and its children', async () => {
    const first = await start();
    await eventually(() => runtimesUnder(dir()).length === 2, { what: 'the runtime and its child' }); // sh and its sleep
    expect(JSON.parse(fs.readFileSync(path.join(dir(), 'runtime.json'), 'utf8')).pid).toBe(
      (first.handle as { pid: number }).pid,
    );
    const second = await start();
    await eventually(() => runtimesUnder(dir()).length === 2, { what: 'the runtime and its child' });
    expect(runtimesUnder(dir())).toContain((second.handle as { pid: number }).pid);
    expect(runtimesUnder(dir())).not.toContain((first.handle as { pid: number }).pid);
  });

  it('stops a runtime whose file was never written (a worker killed between the fork and the write)', async () => {
    const first = await start();
    await eventually(() => runtimesUnder(dir()).length === 2, { what: 'the runtime and its child' });
    fs.rmSync(path.join(dir(), 'runtime.json'));
    const second = await start();
    await eventually(() => runtimesUnder(dir()).length === 2, { what: 'the runtime and its child' });
    expect(runtimesUnder(dir())).not.toContain((first.handle as { pid: number }).pid);
    expect(runtimesUnder(dir())).toContain((second.handle as { pid: number }).pid);
  });

  it("pause stops every process of the sandbox, a daemon that left the runtime's tree too; resume continues them all", async () => {
    const daemonSpec = {
      ...(spec as object),
      id: 'daemon',
      command: [
        '/bin/sh',
        '-c',
        '( setsid sh -c "while :; do :; done" </dev/null >/dev/null 2>&1 & ); sleep 600 & wait',
      ],
    } as never;
    const started = await provider.start({
      sandboxId: 's1',
      spec: daemonSpec,
      sessionApiKey: 'key',
      controlPlaneUrl: 'http://127.0.0.1:9',
    } as never);
    const pid = (started.handle as { pid: number }).pid;
    // The daemon: in a session of its own, reparented away from the runtime (out of its tree).
    await eventually(
      () =>
        runtimesUnder(dir()).filter((p) => p !== pid && readStat(p)?.ppid !== pid && readStat(p)?.state === 'R')
          .length === 1,
      { what: 'the daemon, spinning' },
    );
    await provider.pause(started.handle);
    expect(runtimesUnder(dir()).map((p) => [p, readStat(p)!.state])).toEqual(runtimesUnder(dir()).map((p) => [p, 'T']));
    expect(await provider.inspect(started.handle)).toEqual({ state: 'paused' });
    await provider.resume(started.handle);
    expect(runtimesUnder(dir()).filter((p) => readStat(p)!.state === 'T')).toEqual([]);
  });
});
