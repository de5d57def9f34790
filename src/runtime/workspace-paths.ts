/**
 * Confines file routes to the working directory: a path (relative to it, or absolute) that resolves
 * outside it, directly or through a symbolic link, is refused.
 */
import fs from 'node:fs';
import path from 'node:path';

export class PathEscapeError extends Error {
  constructor(readonly requested: string) {
    super(`path ${JSON.stringify(requested)} is outside the working directory`);
  }
}

const inside = (root: string, p: string) => p === root || p.startsWith(root + path.sep);

/** The nearest existing ancestor of `p` (itself if it exists), with links resolved. */
function realExisting(p: string): { real: string; rest: string } {
  let current = p;
  const rest: string[] = [];
  for (;;) {
    try {
      return { real: fs.realpathSync(current), rest: rest.length > 0 ? path.join(...rest.reverse()) : '' };
    } catch {
      const parent = path.dirname(current);
      if (parent === current) throw new PathEscapeError(p);
      rest.push(path.basename(current));
      current = parent;
    }
  }
}

/** The absolute path `requested` names inside `root`; throws PathEscapeError when it leaves `root`. */
export function resolveInside(root: string, requested: string): string {
  const realRoot = fs.realpathSync(root);
  const target = path.resolve(realRoot, requested);
  if (!inside(realRoot, target)) throw new PathEscapeError(requested);
  const { real, rest } = realExisting(target);
  const resolved = rest ? path.join(real, rest) : real;
  if (!inside(realRoot, resolved)) throw new PathEscapeError(requested);
  return resolved;
}
