/**
 * A file system of its own per process sandbox, of its `disk_mb`: an ext4 image (sparse: it takes on
 * the host only what is written, and `discard` gives back what is deleted) on a loop device, mounted
 * `nosuid,nodev` over the sandbox's directory before anything is made in it. A sandbox that fills it gets
 * "No space left on device" and nothing else does: the database, the service and the other sandboxes
 * keep their disk. Chosen over a watchdog (which a fast writer outruns) and over project quotas (which
 * need a file system made with them): loop devices and mkfs.ext4 are on any Linux host where the worker
 * is root. The images live beside the sandboxes (`<SANDBOXES_DIR>/../disks`, root's, 0700: sandbox-tree.ts),
 * named by sandbox; after a reboot the next start mounts the image again.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { trustedProgram } from '../../src/process/trusted-path';
import type { SandboxTree } from './sandbox-tree';

const execFileAsync = promisify(execFile);
const NAME = /^[A-Za-z0-9-]{1,64}$/;

const run = (name: string, install: string, args: string[]) =>
  execFileAsync(trustedProgram(name, install), args, { timeout: 60_000 }).catch((e: Error & { stderr?: string }) => {
    throw new Error(`${name} ${args.join(' ')}: ${e.stderr?.trim() || e.message}`, { cause: e });
  });

/** Whether `dir` is a mount point (its device differs from its parent's). */
const mounted = (dir: string) => {
  try {
    return fs.statSync(dir).dev !== fs.statSync(path.dirname(dir)).dev;
  } catch {
    return false;
  }
};

/**
 * Whether this worker can give sandboxes disks, or why not: root, mkfs.ext4, mount and the loop
 * devices' control file.
 */
export function disksUsable(): string | null {
  if (process.getuid?.() !== 0) return 'the worker does not run as root';
  if (!fs.existsSync('/dev/loop-control')) return 'no loop devices (/dev/loop-control)';
  try {
    trustedProgram('mkfs.ext4', 'e2fsprogs');
    trustedProgram('mount', 'mount');
    trustedProgram('umount', 'mount');
  } catch (e) {
    return (e as Error).message;
  }
  return null;
}

export class SandboxDisks {
  /** The images are in the tree's `disks`; the tree also gives the docker volumes' mount points. */
  constructor(readonly tree: SandboxTree) {}

  private image(sandboxId: string): string {
    if (!NAME.test(sandboxId)) throw new Error(`not a sandbox id: ${JSON.stringify(sandboxId)}`);
    return path.join(this.tree.path('disks'), `${sandboxId}.ext4`);
  }

  /**
   * `dir` on the sandbox's own file system of `sizeMb`: made (a new sandbox) or mounted again (after a
   * reboot); one already mounted is left as it is. `dir` must not exist yet or be empty when it is made.
   */
  async attach(sandboxId: string, dir: string, sizeMb: number): Promise<void> {
    if (mounted(dir)) return;
    const image = this.image(sandboxId);
    // A sandbox made before disks were given (its files in place, no image): it stays as it was.
    if (!fs.existsSync(image) && fs.existsSync(dir) && fs.readdirSync(dir).length > 0) return;
    this.tree.make('disks');
    if (!fs.existsSync(image)) {
      const work = `${image}.${process.pid}.new`;
      const fd = fs.openSync(work, 'w', 0o600);
      try {
        fs.ftruncateSync(fd, sizeMb * 1024 * 1024);
      } finally {
        fs.closeSync(fd);
      }
      // 1% kept for root (the worker still writes the runtime's handle when the sandbox filled the rest);
      // inode tables and journal initialized lazily (instant).
      await run('mkfs.ext4', 'e2fsprogs', [
        '-q',
        '-F',
        '-m',
        '1',
        '-E',
        'lazy_itable_init=1,lazy_journal_init=1',
        work,
      ]);
      fs.renameSync(work, image);
    }
    // Its parent is the caller's (SandboxTree.make): a `mkdir -p` here would give missing parents 0711 less the umask.
    if (!fs.existsSync(dir)) fs.mkdirSync(dir, { mode: 0o711 });
    if (fs.readdirSync(dir).length > 0 && !mounted(dir))
      throw new Error(`${dir} holds files already: its file system would hide them`);
    await run('mount', 'mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,discard', image, dir]);
    // Its top as the provider would make it: root's, 0711 (mkfs made it 0755); lost+found stays root's.
    fs.chmodSync(dir, 0o711);
  }

  /** Unmounts the sandbox's file system (its processes have ended) and removes the image. */
  async detach(sandboxId: string, dir: string): Promise<void> {
    if (mounted(dir)) {
      // A process of the sandbox that is still being reaped can hold it for a moment: lazily, then.
      await run('umount', 'mount', [dir]).catch(() => run('umount', 'mount', ['-l', dir]));
    }
    fs.rmSync(this.image(sandboxId), { force: true });
  }

  /** How full the sandbox's file system is, in MiB, or null when it has none. */
  usage(dir: string): { usedMb: number; sizeMb: number } | null {
    if (!mounted(dir)) return null;
    const s = fs.statfsSync(dir);
    return {
      usedMb: Math.round(((s.blocks - s.bfree) * s.bsize) / 1024 / 1024),
      sizeMb: Math.round((s.blocks * s.bsize) / 1024 / 1024),
    };
  }
}

/** The disks of process sandboxes as SANDBOX_DISKS asks (`auto`: when usable; `on`: or an error). */
export function sandboxDisks(
  mode: 'auto' | 'on' | 'off',
  tree: SandboxTree,
): { disks: SandboxDisks | undefined; why: string | null } {
  if (mode === 'off') return { disks: undefined, why: null };
  const why = disksUsable();
  if (!why) return { disks: new SandboxDisks(tree), why: null };
  if (mode === 'on') throw new Error(`SANDBOX_DISKS=on, but ${why}`);
  return { disks: undefined, why };
}
