/** Local git repositories for start tests: a bare repository is what a start clones from. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export function git(cwd: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], { cwd, stdio: 'ignore' });
}

/** A bare repository with the given files committed on main. */
export function bareRepo(root: string, name: string, files: Record<string, string>): string {
  const work = path.join(root, `${name}-work`);
  const bare = path.join(root, `${name}.git`);
  fs.mkdirSync(work, { recursive: true });
  git(work, 'init', '-q', '-b', 'main');
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
    fs.writeFileSync(path.join(work, file), text);
  }
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'initial');
  git(root, 'clone', '-q', '--bare', work, bare);
  return bare;
}
