/**
 * Where isolated process sandboxes may live (SANDBOX_PROCESS_ISOLATION=user): the worker, as root, makes
 * SANDBOXES_DIR's parent 0711 and puts the shared runtime beside the sandboxes, so a parent another user
 * could change (a world-writable /tmp, a user's own directory) is refused before anything is written or
 * any mode changed. Runs only as root (jest.config.js).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { notRootsAlone } from '../../activities/sandbox-providers/path-modes';
import { ProcessIsolation } from '../../activities/sandbox-providers/process-isolation';
import { SandboxTree } from '../../activities/sandbox-providers/sandbox-tree';

describe('SANDBOXES_DIR of isolated process sandboxes', () => {
  let root: string;
  const isolation = (sandboxesDir: string) =>
    new ProcessIsolation({
      dataDir: path.join(root, 'data'),
      tree: new SandboxTree({ sandboxesDir, isolated: true, dataDir: path.join(root, 'data') }),
      uidRange: [4_900_000, 4_900_999],
      runtimeBundle: path.join(root, 'no-bundle.js'),
      controlPlaneUrl: 'http://127.0.0.1:1',
      localAllow: [],
      reservedPorts: [],
    });

  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxes-dir-'));
    fs.mkdirSync(path.join(root, 'data'));
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('refuses a parent every user may write, and leaves its mode as it was', async () => {
    const shared = path.join(root, 'shared-tmp');
    fs.mkdirSync(shared);
    fs.chmodSync(shared, 0o1777);
    await expect(isolation(path.join(shared, 'sandboxes')).prepare()).rejects.toThrow(
      `SANDBOXES_DIR (${path.join(shared, 'sandboxes')}) is under ${shared}, which a user other than root may change`,
    );
    expect(fs.statSync(shared).mode & 0o7777).toBe(0o1777);
    expect(fs.existsSync(path.join(shared, 'sandboxes'))).toBe(false);
    expect(fs.existsSync(path.join(shared, 'runtime'))).toBe(false);
  });

  it("refuses a parent under a directory another user owns, where they could swap 'runtime' for a link", async () => {
    const users = path.join(root, 'home-of-a-user');
    fs.mkdirSync(path.join(users, 'service'), { recursive: true });
    fs.chownSync(users, 4_900_500, 4_900_500);
    fs.chmodSync(users, 0o755);
    await expect(isolation(path.join(users, 'service', 'sandboxes')).prepare()).rejects.toThrow(
      `is under ${users}, which a user other than root may change`,
    );
    expect(fs.statSync(path.join(users, 'service')).mode & 0o777).not.toBe(0o711);
    expect(fs.existsSync(path.join(users, 'service', 'runtime'))).toBe(false);
  });

  it('takes a directory of root alone, also below a sticky shared one such as /tmp', () => {
    const sticky = path.join(root, 'sticky');
    fs.mkdirSync(path.join(sticky, 'owned-by-root'), { recursive: true });
    fs.chmodSync(sticky, 0o1777);
    fs.chmodSync(path.join(sticky, 'owned-by-root'), 0o755);
    expect(notRootsAlone(path.join(sticky, 'owned-by-root'))).toBeNull();
    expect(notRootsAlone(path.join(sticky, 'owned-by-root', 'not-made-yet'))).toBeNull();
    // A world-writable directory without the sticky bit is refused anywhere on the way up.
    fs.chmodSync(sticky, 0o777);
    expect(notRootsAlone(path.join(sticky, 'owned-by-root'))).toBe(sticky);
    // Nor one its group may write: a member could swap `runtime` for a link.
    const grouped = path.join(root, 'group-writable');
    fs.mkdirSync(grouped);
    fs.chmodSync(grouped, 0o775);
    expect(notRootsAlone(grouped)).toBe(grouped);
    // The default's parents (/var/lib) are root's alone.
    expect(notRootsAlone('/var/lib')).toBeNull();
  });

  it('makes the whole tree with its modes whichever part comes first, under a umask of 077 too', () => {
    fs.chmodSync(root, 0o711); // mkdtemp's 0700 would close what is below to the sandboxes
    const fresh = path.join(root, 'fresh', 'not', 'made');
    const tree = new SandboxTree({ sandboxesDir: path.join(fresh, 'sandboxes'), isolated: true });
    const umask = process.umask(0o077);
    try {
      // The disks' 0700 first (a `mkdir -p` of it made the parents 0700 and closed them to the sandboxes).
      tree.make('disks');
      // Then what the isolation's prepare() makes (fresh-machine.test.ts runs it whole, in a service).
      tree.make('sandboxes');
      tree.make('runtime');
    } finally {
      process.umask(umask);
    }
    const mode = (p: string) => (fs.statSync(p).mode & 0o777).toString(8);
    expect(['fresh', 'fresh/not', 'fresh/not/made'].map((d) => mode(path.join(root, d)))).toEqual([
      '711',
      '711',
      '711',
    ]);
    expect(['sandboxes', 'runtime', 'disks'].map((d) => mode(path.join(fresh, d)))).toEqual(['711', '711', '700']);
  });

  it('opens again a root an earlier version closed (0700), and refuses a part that is a link', () => {
    fs.chmodSync(root, 0o711);
    const closed = path.join(root, 'closed');
    fs.mkdirSync(path.join(closed, 'disks'), { recursive: true, mode: 0o700 });
    fs.chmodSync(closed, 0o700);
    const tree = new SandboxTree({ sandboxesDir: path.join(closed, 'sandboxes'), isolated: true });
    expect(tree.make('sandboxes')).toBe(path.join(closed, 'sandboxes'));
    expect(fs.statSync(closed).mode & 0o777).toBe(0o711);
    fs.symlinkSync('/etc', path.join(closed, 'runtime'));
    expect(() => tree.make('runtime')).toThrow(`${path.join(closed, 'runtime')} is a symbolic link`);
    expect(fs.statSync('/etc').mode & 0o777).toBe(0o755);
  });

  it('refuses SANDBOXES_DIR inside DATA_DIR before any mode changes', () => {
    const data = path.join(root, 'data');
    const tree = new SandboxTree({ sandboxesDir: path.join(data, 'sandboxes'), isolated: true, dataDir: data });
    expect(() => tree.make('disks')).toThrow('is inside DATA_DIR');
    expect(fs.existsSync(path.join(data, 'disks'))).toBe(false);
  });

  it('refuses a root still to be made in a directory others may write (they could make it first), or one under a link of theirs', () => {
    fs.chmodSync(root, 0o711);
    const sticky = path.join(root, 'sticky-shared');
    fs.mkdirSync(sticky);
    fs.chmodSync(sticky, 0o1777);
    const tree = new SandboxTree({ sandboxesDir: path.join(sticky, 'ac', 'sandboxes'), isolated: true });
    expect(() => tree.make('disks')).toThrow(`would be made in ${sticky}, where other users may make it first`);
    expect(fs.existsSync(path.join(sticky, 'ac'))).toBe(false);
    // Made by root first, it is taken.
    fs.mkdirSync(path.join(sticky, 'ac'), { mode: 0o755 });
    expect(tree.make('disks')).toBe(path.join(sticky, 'ac', 'disks'));
    // A user's link to a directory of root's (it could point elsewhere later).
    const link = path.join(root, 'users-link');
    fs.symlinkSync(path.join(sticky, 'ac'), link);
    fs.lchownSync(link, 4_900_501, 4_900_501);
    expect(() => new SandboxTree({ sandboxesDir: path.join(link, 'sandboxes'), isolated: true }).make('disks')).toThrow(
      `is under ${link}, which a user other than root may change`,
    );
    expect(() => new SandboxTree({ sandboxesDir: '/sandboxes', isolated: true }).make('sandboxes')).toThrow(
      'directly under /',
    );
  });
});
