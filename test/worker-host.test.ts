/** The worker's host name (worker/worker-host.ts): WORKER_HOST, or one made once and kept in DATA_DIR. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { workerHost } from '../worker/worker-host';

describe('worker host', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'worker-host-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('WORKER_HOST wins and writes nothing', () => {
    expect(workerHost('host-b', dir)).toBe('host-b');
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('without it, a name made once and kept in DATA_DIR (0600): the same after a restart, another for another DATA_DIR', () => {
    const data = path.join(dir, 'data');
    const first = workerHost(undefined, data);
    expect(first).toMatch(/^[A-Za-z0-9][A-Za-z0-9._-]*-[0-9a-f]{8}$/);
    expect(fs.statSync(path.join(data, 'worker-host')).mode & 0o777).toBe(0o600);
    expect(workerHost(undefined, data)).toBe(first);
    expect(workerHost(undefined, path.join(dir, 'other'))).not.toBe(first);
  });

  it('refuses a kept name that is no host name, a link in its place, and a FIFO (which would hold the start)', () => {
    fs.writeFileSync(path.join(dir, 'worker-host'), 'a/../b\n');
    expect(() => workerHost(undefined, dir)).toThrow(/holds no host name.*set WORKER_HOST/);
    fs.rmSync(path.join(dir, 'worker-host'));
    fs.writeFileSync(path.join(dir, 'elsewhere'), 'host-x\n');
    fs.symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 'worker-host'));
    expect(() => workerHost(undefined, dir)).toThrow(/cannot be read.*set WORKER_HOST/);
    fs.rmSync(path.join(dir, 'worker-host'));
    execFileSync('mkfifo', [path.join(dir, 'worker-host')]);
    expect(() => workerHost(undefined, dir)).toThrow(/cannot be read \(not a regular file\)/);
  });
});
