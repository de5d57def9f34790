/**
 * Read-only views of the git repositories in the working directory, as the reference agent server gives
 * them: the files a repository's working tree changed against a ref (GitChange), and one file's content
 * at the ref and now (GitDiff). git runs without a shell, with a time limit and an output limit
 * (git-command.ts); the repository it finds must lie inside the working directory (git does not look
 * above it), and a repository's own settings cannot make it run programs (fsmonitor, external diff,
 * textconv are off).
 * Contents are read as UTF-8; a file larger than the limit (1 MiB by default) is refused (too_large),
 * not cut, so what a client shows is never silently partial.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runGit, type GitRun } from './git-command';
import { nulSeparated, parseNameStatus } from './git-name-status';
import { GitViewError } from './git-view-errors';
import { PathEscapeError, resolveInside } from './workspace-paths';

export {
  GIT_CHANGE_STATUSES,
  GitChangeSchema,
  GitDiffSchema,
  type GitChange,
  type GitChangeStatus,
  type GitDiff,
} from '../schemas/git';
import type { GitChange, GitDiff } from '../schemas/git';

/** A ref a client may name: a branch, a tag, a commit, `HEAD~2`, `main^`, `HEAD@{1}`; never an option. */
export const GIT_REF_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._/~^@{}-]*$/;

export interface GitViewOptions {
  /** The runtime's working directory: every path and repository must lie inside it. */
  workingDir: string;
  /** Largest file content returned, in bytes. @default 1 MiB */
  maxFileBytes?: number;
  /** Largest listing git may print (changes), in bytes. @default 8 MiB */
  maxListBytes?: number;
  /** Time limit of one git command. @default 10 s */
  timeoutMs?: number;
  /** Views computed at once; more are refused (busy). @default 8 */
  maxConcurrent?: number;
}

export class GitViews {
  private readonly maxFileBytes: number;
  private readonly maxListBytes: number;
  private readonly timeoutMs: number;
  private readonly maxConcurrent: number;
  private running = 0;

  constructor(private readonly o: GitViewOptions) {
    this.maxFileBytes = o.maxFileBytes ?? 1024 * 1024;
    this.maxListBytes = o.maxListBytes ?? 8 * 1024 * 1024;
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.maxConcurrent = o.maxConcurrent ?? 8;
  }

  /** The changes of the repository at (or around) `requested`, against `ref` (default HEAD; an unborn HEAD: everything is added). */
  changes(requested: string, ref?: string): Promise<GitChange[]> {
    return this.limited(async () => {
      const target = this.resolve(requested);
      const stat = await fs.promises.stat(target).catch(() => null);
      if (!stat) throw new GitViewError('not_found', `No such directory: ${requested}`);
      if (!stat.isDirectory())
        throw new GitViewError('not_a_repository', `${requested} is a file, not a repository directory`);
      const top = await this.repositoryOf(target, requested);
      const base = await this.base(top, ref);
      const diff = await this.git(
        top,
        ['diff', '--no-ext-diff', '--no-textconv', '--name-status', '-z', '-M', base, '--'],
        this.maxListBytes,
        'the list of changes',
      );
      if (diff.code !== 0) throw new Error(`git diff failed: ${diff.stderr.slice(0, 500)}`);
      const untracked = await this.git(
        top,
        ['ls-files', '--others', '--exclude-standard', '-z'],
        this.maxListBytes,
        'the list of changes',
      );
      if (untracked.code !== 0) throw new Error(`git ls-files failed: ${untracked.stderr.slice(0, 500)}`);
      const changes = [
        ...parseNameStatus(diff.stdout.toString('utf8')),
        ...nulSeparated(untracked.stdout.toString('utf8')).map((p) => ({ status: 'ADDED' as const, path: p })),
      ];
      return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    });
  }

  /** One file at `ref` (default HEAD) and now. */
  diff(requested: string, ref?: string): Promise<GitDiff> {
    return this.limited(async () => {
      const target = this.resolve(requested);
      const stat = await fs.promises.stat(target).catch(() => null);
      if (stat?.isDirectory()) throw new GitViewError('not_a_file', `${requested} is a directory, not a file`);
      const top = await this.repositoryOf(await this.existingDirOf(target), requested);
      const relative = path.relative(top, target).split(path.sep).join('/');
      if (!relative || relative.startsWith('../'))
        throw new GitViewError('not_a_file', `${requested} is not a file of the repository at ${top}`);
      const base = await this.base(top, ref);
      const original = await this.blobAt(top, base, relative, requested);
      let modified: string | null = null;
      if (stat?.isFile()) {
        if (stat.size > this.maxFileBytes) throw this.tooLarge(requested, stat.size);
        modified = await readBounded(target, this.maxFileBytes, () => this.tooLarge(requested));
      }
      if (original === null && modified === null)
        throw new GitViewError('not_found', `${requested} is neither in ${ref ?? 'HEAD'} nor in the working tree`);
      return { modified, original };
    });
  }

  // ---- pieces ----

  private async limited<T>(f: () => Promise<T>): Promise<T> {
    if (this.running >= this.maxConcurrent)
      throw new GitViewError('busy', `Too many git views at once (${this.maxConcurrent}); try again`);
    this.running++;
    try {
      return await f();
    } finally {
      this.running--;
    }
  }

  private resolve(requested: string): string {
    try {
      return resolveInside(this.o.workingDir, requested);
    } catch (e) {
      if (e instanceof PathEscapeError) throw new GitViewError('outside', e.message);
      throw e;
    }
  }

  /** The nearest existing directory at or above `p` (a deleted file's directory may be gone too). */
  private async existingDirOf(p: string): Promise<string> {
    const root = fs.realpathSync(this.o.workingDir);
    for (let dir = path.dirname(p); ; dir = path.dirname(dir)) {
      if ((await fs.promises.stat(dir).catch(() => null))?.isDirectory()) return dir;
      if (dir === root || dir === path.dirname(dir)) return root;
    }
  }

  /** The root of the repository `dir` belongs to; it must lie inside the working directory. */
  private async repositoryOf(dir: string, requested: string): Promise<string> {
    const r = await this.git(dir, ['rev-parse', '--show-toplevel'], 64 * 1024, 'the repository root');
    const top = r.stdout.toString('utf8').trim();
    if (r.code !== 0 || !top)
      throw new GitViewError(
        'not_a_repository',
        `${requested} is not in a git repository (with a working tree) inside the working directory`,
      );
    try {
      return resolveInside(this.o.workingDir, top);
    } catch {
      throw new GitViewError(
        'not_a_repository',
        `${requested} is not in a git repository inside the working directory`,
      );
    }
  }

  /** The commit `ref` names; without a ref HEAD, or the empty tree while HEAD is unborn (no commit yet). */
  private async base(top: string, ref: string | undefined): Promise<string> {
    if (ref !== undefined && !GIT_REF_PATTERN.test(ref))
      throw new GitViewError('unknown_ref', `Not a ref: ${JSON.stringify(ref)}`);
    const r = await this.git(
      top,
      ['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref ?? 'HEAD'}^{commit}`],
      4096,
      'a commit id',
    );
    if (r.code === 0) return r.stdout.toString('utf8').trim();
    if (ref !== undefined) throw new GitViewError('unknown_ref', `No commit ${JSON.stringify(ref)} in the repository`);
    const empty = await this.git(top, ['hash-object', '-t', 'tree', '/dev/null'], 4096, 'the empty tree');
    if (empty.code !== 0) throw new Error(`git hash-object failed: ${empty.stderr.slice(0, 500)}`);
    return empty.stdout.toString('utf8').trim();
  }

  /** The content of `relative` in commit `base`; null when it is not a file there. */
  private async blobAt(top: string, base: string, relative: string, requested: string): Promise<string | null> {
    const object = `${base}:${relative}`;
    const type = await this.git(top, ['cat-file', '-t', object], 4096, 'an object type');
    if (type.code !== 0 || type.stdout.toString('utf8').trim() !== 'blob') return null;
    const size = await this.git(top, ['cat-file', '-s', object], 4096, 'an object size');
    const bytes = Number(size.stdout.toString('utf8').trim());
    if (size.code !== 0 || !Number.isFinite(bytes)) return null;
    if (bytes > this.maxFileBytes) throw this.tooLarge(requested, bytes);
    const blob = await this.git(
      top,
      ['cat-file', 'blob', object],
      this.maxFileBytes + 1,
      `the content of ${requested}`,
    );
    return blob.code === 0 ? blob.stdout.toString('utf8') : null;
  }

  private tooLarge(requested: string, size?: number): GitViewError {
    return new GitViewError(
      'too_large',
      `${requested} is larger than the limit of ${this.maxFileBytes} bytes${size !== undefined ? ` (${size} bytes)` : ''}`,
    );
  }

  private git(cwd: string, args: string[], maxBuffer: number, what: string): Promise<GitRun> {
    return runGit({ workingDir: this.o.workingDir, timeoutMs: this.timeoutMs }, cwd, args, maxBuffer, what);
  }
}

/** A file's content as UTF-8, refused (by `tooLarge`) when it grew past `max` bytes since its size was read. */
async function readBounded(file: string, max: number, tooLarge: () => Error): Promise<string> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const buf = Buffer.alloc(max + 1);
    let read = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, read, buf.length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
      if (read > max) throw tooLarge();
    }
    return buf.subarray(0, read).toString('utf8');
  } finally {
    await handle.close();
  }
}
