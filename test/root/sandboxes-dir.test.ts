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

describe('SANDBOXES_DIR of isolated process sandboxes', () => {
  let root: string;
  const isolation = (sandboxesDir: string) =>
    new ProcessIsolation({
      dataDir: path.join(root, 'data'),
      sandboxesDir,
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
});
