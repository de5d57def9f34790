/**
 * Whether a path on the host is open to users other than its owner (a sandbox's uid), read from the
 * modes of it and of the directories above it.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The first existing directory from `dir` up that others cannot traverse, or null. */
export function untraversable(dir: string): string | null {
  let d = dir;
  for (;;) {
    const st = fs.statSync(d, { throwIfNoEntry: false });
    if (st && (st.mode & 0o001) === 0) return d;
    const parent = path.dirname(d);
    if (parent === d) return null;
    d = parent;
  }
}

/**
 * The first existing directory from `dir` up that someone other than root could change, or null: one a
 * user owns, or one its group or others may write (a sticky one such as /tmp only above a directory root
 * owns, and never as `dir` itself), or a link another user owns. A part that does not exist yet is made by
 * root (SandboxTree refuses one still to be made where others may write). Root writes and changes modes
 * below `dir`; none of it may be another's to swap.
 */
export function notRootsAlone(dir: string): string | null {
  let d = dir;
  for (;;) {
    // A link another user owns could be pointed elsewhere at any time, wherever it leads now.
    if (fs.lstatSync(d, { throwIfNoEntry: false })?.isSymbolicLink() && fs.lstatSync(d).uid !== 0) return d;
    const st = fs.statSync(d, { throwIfNoEntry: false });
    if (st && (st.uid !== 0 || ((st.mode & 0o022) !== 0 && (d === dir || (st.mode & 0o1000) === 0)))) return d;
    const parent = path.dirname(d);
    if (parent === d) return null;
    d = parent;
  }
}

/** Whether a path is readable (and its directories traversable) by a user that is neither its owner nor in its group. */
export function readableByOthers(file: string): boolean {
  let dir = path.dirname(file);
  try {
    if ((fs.statSync(file).mode & 0o004) === 0) return false;
    for (;;) {
      if ((fs.statSync(dir).mode & 0o001) === 0) return false;
      const parent = path.dirname(dir);
      if (parent === dir) return true;
      dir = parent;
    }
  } catch {
    return false;
  }
}
