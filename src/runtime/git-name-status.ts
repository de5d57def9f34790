/** Parsers of git's NUL-separated listings (`diff --name-status -z`, `ls-files -z`) into the changes a view lists. */
import type { GitChange } from '../schemas/git';

export const nulSeparated = (s: string) => s.split('\0').filter(Boolean);

/** `git diff --name-status -z`: a status, then one path (two for a rename or a copy). */
export function parseNameStatus(output: string): GitChange[] {
  const fields = output.split('\0');
  const changes: GitChange[] = [];
  for (let i = 0; i < fields.length;) {
    const code = fields[i++]!;
    if (!code) continue;
    const kind = code[0];
    if (kind === 'R' || kind === 'C') {
      i++; // the old path
      const to = fields[i++];
      if (to) changes.push({ status: kind === 'R' ? 'MOVED' : 'ADDED', path: to });
      continue;
    }
    const p = fields[i++];
    if (!p) continue;
    changes.push({ status: kind === 'A' ? 'ADDED' : kind === 'D' ? 'DELETED' : 'UPDATED', path: p });
  }
  return changes;
}
