/** The runtime's git views (GitChange, GitDiff), against the real runtime process over HTTP and real git repositories. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { git } from './helpers/git-repo';
import { startRuntimeProcess, type RuntimeProcess as Runtime } from './helpers/runtime-process';

const KEY = 'runtime-git-test-session-key-0123456789';

const startRuntime = () => startRuntimeProcess(KEY, 'runtime-git-');

async function get(rt: Runtime, p: string, key: string | null = KEY): Promise<{ status: number; body: any }> {
  const res = await fetch(rt.url + p, { headers: key ? { 'X-Session-API-Key': key } : {} });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const changes = (rt: Runtime, p: string, ref?: string) =>
  get(rt, `/api/git/changes/${encodeURIComponent(p)}${ref !== undefined ? `?ref=${encodeURIComponent(ref)}` : ''}`);
const diff = (rt: Runtime, p: string, ref?: string) =>
  get(rt, `/api/git/diff/${encodeURIComponent(p)}${ref !== undefined ? `?ref=${encodeURIComponent(ref)}` : ''}`);

function write(dir: string, files: Record<string, string | Buffer>): void {
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), content);
  }
}

describe('runtime git views', () => {
  let rt: Runtime;
  let repo: string;

  beforeAll(async () => {
    rt = await startRuntime();
    // A repository with two commits, then changes of every kind in its working tree.
    repo = path.join(rt.workdir, 'project');
    fs.mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    write(repo, {
      'keep.txt': 'same\n',
      'edit.txt': 'old line\n',
      'gone.txt': 'bye\n',
      'old-name.txt': 'moving content that is long enough to be recognized\n',
      'dir/deep.txt': 'v1\n',
    });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'first');
    git(repo, 'tag', 'v1');
    write(repo, { 'dir/deep.txt': 'v2\n' });
    git(repo, 'commit', '-q', '-am', 'second');
    write(repo, {
      'edit.txt': 'new line\n',
      'new file.txt': 'fresh\n',
      'staged.txt': 'staged\n',
      'ignored.log': 'noise\n',
      '.gitignore': '*.log\n',
    });
    fs.rmSync(path.join(repo, 'gone.txt'));
    git(repo, 'mv', 'old-name.txt', 'new-name.txt');
    git(repo, 'add', 'staged.txt');
  });

  afterAll(() => {
    if (rt?.child.exitCode === null) rt.child.kill('SIGKILL');
  });

  it('lists the changes of a repository against HEAD, relative to its root; untracked files are ADDED, ignored ones left out', async () => {
    const expected = [
      { status: 'ADDED', path: '.gitignore' },
      { status: 'UPDATED', path: 'edit.txt' },
      { status: 'DELETED', path: 'gone.txt' },
      { status: 'ADDED', path: 'new file.txt' },
      { status: 'MOVED', path: 'new-name.txt' },
      { status: 'ADDED', path: 'staged.txt' },
    ];
    expect(await changes(rt, 'project')).toEqual({ status: 200, body: expected });
    // An absolute path, and a subdirectory of the repository: the same repository, the same paths.
    expect(await changes(rt, repo)).toEqual({ status: 200, body: expected });
    expect((await changes(rt, path.join(repo, 'dir'))).body).toEqual(expected);
    // Against an older ref, the commit since then shows too.
    const sinceV1 = await changes(rt, 'project', 'v1');
    expect(sinceV1.status).toBe(200);
    expect(sinceV1.body).toContainEqual({ status: 'UPDATED', path: 'dir/deep.txt' });
    expect((await changes(rt, 'project', 'HEAD~1')).body).toEqual(sinceV1.body);
  });

  it('treats everything as ADDED in a repository without a commit', async () => {
    const fresh = path.join(rt.workdir, 'fresh');
    fs.mkdirSync(fresh);
    git(fresh, 'init', '-q', '-b', 'main');
    write(fresh, { 'a.txt': 'a\n', 'b/c.txt': 'c\n' });
    git(fresh, 'add', 'a.txt');
    expect(await changes(rt, 'fresh')).toEqual({
      status: 200,
      body: [
        { status: 'ADDED', path: 'a.txt' },
        { status: 'ADDED', path: 'b/c.txt' },
      ],
    });
    expect(await diff(rt, 'fresh/a.txt')).toEqual({ status: 200, body: { original: null, modified: 'a\n' } });
  });

  it('gives one file at the ref and now: original null when it is new, modified null when it is deleted', async () => {
    expect(await diff(rt, 'project/edit.txt')).toEqual({
      status: 200,
      body: { original: 'old line\n', modified: 'new line\n' },
    });
    expect(await diff(rt, path.join(repo, 'edit.txt'))).toEqual({
      status: 200,
      body: { original: 'old line\n', modified: 'new line\n' },
    });
    expect(await diff(rt, 'project/gone.txt')).toEqual({ status: 200, body: { original: 'bye\n', modified: null } });
    expect(await diff(rt, 'project/new file.txt')).toEqual({
      status: 200,
      body: { original: null, modified: 'fresh\n' },
    });
    expect(await diff(rt, 'project/keep.txt')).toEqual({
      status: 200,
      body: { original: 'same\n', modified: 'same\n' },
    });
    expect(await diff(rt, 'project/dir/deep.txt', 'v1')).toEqual({
      status: 200,
      body: { original: 'v1\n', modified: 'v2\n' },
    });
    // A file deleted with its directory.
    write(repo, { 'lost/only.txt': 'only\n' });
    git(repo, 'add', 'lost/only.txt');
    git(repo, 'commit', '-q', '-m', 'lost');
    fs.rmSync(path.join(repo, 'lost'), { recursive: true });
    expect(await diff(rt, 'project/lost/only.txt')).toEqual({
      status: 200,
      body: { original: 'only\n', modified: null },
    });
  });

  it('answers 401 without the session key', async () => {
    expect(await get(rt, `/api/git/changes/project`, null)).toEqual({
      status: 401,
      body: { detail: 'Missing X-Session-API-Key header' },
    });
    expect((await get(rt, `/api/git/diff/${encodeURIComponent('project/edit.txt')}`, null)).status).toBe(401);
    expect(
      (await get(rt, `/api/git/diff/${encodeURIComponent('project/edit.txt')}`, 'x'.repeat(KEY.length))).status,
    ).toBe(401);
  });

  it('answers 404 for a path that does not exist, and a diff of a file that is neither at the ref nor in the tree', async () => {
    const missing = await changes(rt, 'no-such-dir');
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toContain('No such directory');
    const neither = await diff(rt, 'project/never.txt');
    expect(neither.status).toBe(404);
    expect(neither.body.detail).toContain('neither in HEAD nor in the working tree');
  });

  it('answers 400 outside the working directory (also through a link), outside a repository, for a directory diff and an unknown ref', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'runtime-git-outside-'));
    git(outside, 'init', '-q', '-b', 'main');
    fs.symlinkSync(outside, path.join(rt.workdir, 'link'));
    for (const p of ['../', '../..', '/etc', outside, 'link', 'link/x.txt']) {
      for (const r of [await changes(rt, p), await diff(rt, p)]) {
        expect(r.status).toBe(400);
        expect(r.body.detail).toContain('outside the working directory');
      }
    }
    // A repository above the working directory is never found from inside it.
    git(path.dirname(rt.workdir), 'init', '-q', '-b', 'main');
    fs.mkdirSync(path.join(rt.workdir, 'plain'));
    fs.writeFileSync(path.join(rt.workdir, 'plain', 'f.txt'), 'x');
    const plain = await changes(rt, 'plain');
    expect(plain.status).toBe(400);
    expect(plain.body.detail).toContain('not in a git repository');
    expect((await diff(rt, 'plain/f.txt')).status).toBe(400);
    expect((await changes(rt, rt.workdir)).status).toBe(400);
    const dirDiff = await diff(rt, 'project/dir');
    expect(dirDiff.status).toBe(400);
    expect(dirDiff.body.detail).toContain('is a directory');
    expect((await changes(rt, 'project/edit.txt')).status).toBe(400);
    const unknown = await changes(rt, 'project', 'no-such-branch');
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toContain('No commit "no-such-branch"');
    expect((await diff(rt, 'project/edit.txt', 'deadbeef')).status).toBe(400);
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it('answers 422 for a ref that could be an option or holds other characters, and for a NUL in the path', async () => {
    for (const ref of ['--output=/tmp/x', '-p', 'HEAD:edit.txt', 'a b', 'main;rm -rf', '$(id)', '']) {
      const r = await changes(rt, 'project', ref);
      expect(r.status).toBe(422);
      expect(r.body.detail[0].loc).toEqual(['query', 'ref']);
      expect((await diff(rt, 'project/edit.txt', ref)).status).toBe(422);
    }
    const nul = await get(rt, '/api/git/changes/project%00x');
    expect(nul.status).toBe(422);
    expect(nul.body.detail[0].loc).toEqual(['path', 'path']);
    expect((await get(rt, `/api/git/diff/${'a'.repeat(5000)}`)).status).toBe(422);
  });

  it('refuses a file over 1 MiB with 413, at the ref and in the tree', async () => {
    const big = Buffer.alloc(1024 * 1024 + 1, 'a');
    write(repo, { 'big.txt': big });
    const r = await diff(rt, 'project/big.txt');
    expect(r.status).toBe(413);
    expect(r.body.detail).toContain('larger than the limit of 1048576 bytes');
    git(repo, 'add', 'big.txt');
    git(repo, 'commit', '-q', '-m', 'big');
    write(repo, { 'big.txt': 'small now\n' });
    expect((await diff(rt, 'project/big.txt')).status).toBe(413);
    fs.rmSync(path.join(repo, 'big.txt'));
    git(repo, 'rm', '-q', '--cached', 'big.txt');
    git(repo, 'commit', '-q', '-m', 'no big');
    // Exactly at the limit is fine.
    write(repo, { 'edge.txt': Buffer.alloc(1024 * 1024, 'b') });
    expect((await diff(rt, 'project/edge.txt')).body.modified).toHaveLength(1024 * 1024);
  });

  it('never runs what a hostile repository configures (fsmonitor, external diff)', async () => {
    const marker = path.join(rt.workdir, 'pwned');
    git(repo, 'config', 'core.fsmonitor', `touch ${marker}; false`);
    git(repo, 'config', 'diff.external', `touch ${marker}`);
    expect((await changes(rt, 'project')).status).toBe(200);
    expect((await diff(rt, 'project/edit.txt')).status).toBe(200);
    expect(fs.existsSync(marker)).toBe(false);
    git(repo, 'config', '--unset', 'core.fsmonitor');
    git(repo, 'config', '--unset', 'diff.external');
  });
});
