/**
 * The directories of the sandboxes of this host, under one root (SANDBOXES_DIR's parent), and the one
 * function that makes them: whichever step comes first on a fresh machine (a disk attached, the isolation
 * prepared, the agent server shared, a docker volume bound), each directory gets its mode, and so does
 * every missing directory above the root. A step that made a parent with its own mode (a `mkdir -p` of
 * the disks' 0700) would otherwise close the root to the sandboxes' uids for good.
 *
 * Isolated (SANDBOX_PROCESS_ISOLATION=user), sandboxes reach their own directory by name only:
 *   <root>            0711  root's; checked first: it and everything above it may be changed by root alone
 *   SANDBOXES_DIR     0711  a directory per sandbox in it (root's 0711, its uid's own directories 0700)
 *   <root>/runtime    0711  the built-in runtime's bundle and the agent server, readable, writable by none
 *   <root>/disks      0700  the sandboxes' file system images (process-disks.ts)
 *   <root>/docker-workspaces 0711  mount points of docker sandboxes' volumes on a disk of their own
 * Not isolated, the root is the service's (DATA_DIR by default): a missing part is made 0700 (its parents
 * as `mkdir -p` makes them), and no existing mode is changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SANDBOXES_BASE } from '../../src/config';
import { notRootsAlone, untraversable } from './path-modes';

const PARTS = {
  sandboxes: 0o711,
  runtime: 0o711,
  disks: 0o700,
  'docker-workspaces': 0o711,
} as const;

export type SandboxTreePart = keyof typeof PARTS;

export interface SandboxTreeOptions {
  /** SANDBOXES_DIR: the directories of the sandboxes; its parent is the tree's root. */
  sandboxesDir: string;
  /** Sandboxes run as uids of their own: the root must be root's alone and open to them (o+x). */
  isolated?: boolean;
  /** DATA_DIR, which isolated sandboxes may not enter: the tree may not lie in it. */
  dataDir?: string;
}

export class SandboxTree {
  readonly root: string;

  constructor(private readonly opts: SandboxTreeOptions) {
    this.root = path.dirname(opts.sandboxesDir);
  }

  /** Where `part` is (made or not): SANDBOXES_DIR itself, or a directory beside it. */
  path(part: SandboxTreePart): string {
    return part === 'sandboxes' ? this.opts.sandboxesDir : path.join(this.root, part);
  }

  /**
   * Makes `part`, the root and any missing directory above it, each with its mode (isolated: also fixed
   * when another step or an earlier version left another), and answers its path. Isolated, it first
   * refuses a root that someone other than root could change or make first, one inside DATA_DIR, and one
   * under a directory closed to others, before anything is made or any mode changed; and checks again,
   * without following links, what it made.
   */
  make(part: SandboxTreePart): string {
    const dir = this.path(part);
    if (!this.opts.isolated) {
      // The service's own directory: parents as `mkdir -p` makes them, the part its own.
      fs.mkdirSync(this.root, { recursive: true });
      makeMissing(dir, 0o700);
      return dir;
    }
    if (process.getuid?.() !== 0) throw new Error('SANDBOX_PROCESS_ISOLATION=user needs the worker to run as root');
    this.refuseUnsafeRoot();
    this.openBase();
    const closed = untraversable(path.dirname(this.root));
    if (closed)
      throw new Error(
        `sandboxes in ${this.opts.sandboxesDir} cannot be reached by their users: ${closed} is closed to others (o+x); choose another SANDBOXES_DIR`,
      );
    makeMissing(this.root, 0o711);
    rootsOwn(this.root);
    fs.chmodSync(this.root, 0o711);
    makeMissing(dir, PARTS[part]);
    rootsOwn(dir);
    fs.chmodSync(dir, PARTS[part]);
    return dir;
  }

  private refuseUnsafeRoot(): void {
    const { dataDir, sandboxesDir } = this.opts;
    const inData = (p: string, data: string) => p === data || isInside(p, data);
    if (dataDir && (inData(sandboxesDir, dataDir) || inData(resolvedAsFar(sandboxesDir), resolvedAsFar(dataDir))))
      throw new Error(
        `SANDBOXES_DIR (${sandboxesDir}) is inside DATA_DIR, which isolated sandboxes may not enter: leave it unset, or choose a directory outside`,
      );
    if (this.root === path.dirname(this.root))
      throw new Error(`SANDBOXES_DIR (${sandboxesDir}) is directly under /, whose mode the worker would change`);
    // The root is made 0711 and holds the shared runtime beside the sandboxes: it and every directory above
    // it must be root's alone (SANDBOXES_DIR=/tmp/x would take /tmp's sticky bit off; one under a user's
    // directory would let that user swap `runtime` or `sandboxes` for a link).
    const changeable = notRootsAlone(this.root);
    if (changeable)
      throw new Error(
        `SANDBOXES_DIR (${sandboxesDir}) is under ${changeable}, which a user other than root may change: choose a directory only root may write, such as the default under ${SANDBOXES_BASE}`,
      );
    // A directory still to be made in one that others may write (even a sticky /tmp) could be made by them first.
    const nearest = nearestExisting(this.root);
    if (nearest !== this.root && (fs.statSync(nearest).mode & 0o022) !== 0)
      throw new Error(
        `SANDBOXES_DIR (${sandboxesDir}) would be made in ${nearest}, where other users may make it first: make ${path.join(nearest, path.relative(nearest, this.root).split(path.sep)[0]!)} as root first, or choose a directory under ${SANDBOXES_BASE}`,
      );
  }

  /**
   * The default base (/var/lib/agent-control) is this service's: opened to others (o+x) when an earlier
   * version made it 0700. Nothing else above the root is changed.
   */
  private openBase(): void {
    if (!isInside(this.root, SANDBOXES_BASE)) return;
    const st = fs.lstatSync(SANDBOXES_BASE, { throwIfNoEntry: false });
    if (st?.isDirectory() && st.uid === 0 && (st.mode & 0o001) === 0) fs.chmodSync(SANDBOXES_BASE, 0o711);
  }
}

/** A directory the worker made or is about to change: root's, not a link, written by no one else. */
function rootsOwn(dir: string): void {
  const st = fs.lstatSync(dir);
  if (st.isSymbolicLink()) throw new Error(`${dir} is a symbolic link`);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0)
    throw new Error(
      `${dir} is not a directory of root's alone (owner ${st.uid}, mode ${(st.mode & 0o7777).toString(8)})`,
    );
}

/** The deepest part of `p` that exists. */
function nearestExisting(p: string): string {
  let d = p;
  while (!fs.existsSync(d) && path.dirname(d) !== d) d = path.dirname(d);
  return d;
}

/** `p` with its existing part's links resolved (the rest as written). */
function resolvedAsFar(p: string): string {
  const existing = nearestExisting(p);
  return path.join(fs.realpathSync(existing), path.relative(existing, p));
}

/**
 * Makes each missing directory of `dir`, from the top down, with `mode` whatever the umask (`mkdir -p`
 * with a mode gives it only where the umask lets it, and a umask of 077 would close every parent).
 */
function makeMissing(dir: string, mode: number): void {
  if (fs.existsSync(dir)) return;
  makeMissing(path.dirname(dir), mode);
  try {
    fs.mkdirSync(dir, { mode });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e; // another worker made it first
    return;
  }
  fs.chmodSync(dir, mode);
}

/** Whether `p` lies strictly below `dir`. */
const isInside = (p: string, dir: string) => p.startsWith(dir + path.sep);
