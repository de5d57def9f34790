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
