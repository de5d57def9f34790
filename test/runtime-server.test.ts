/** The runtime's first endpoints, against the real runtime process over HTTP. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readStat } from '../src/process/process-tree';
import { startRuntimeProcess, type RuntimeProcess as Runtime } from './helpers/runtime-process';
import { setTimeout as sleep } from 'node:timers/promises';

const KEY = 'runtime-test-session-key-0123456789';

const started: Runtime[] = [];

/** A runtime of this file's, killed at the end whatever happened. */
async function startRuntime(env: Record<string, string> = {}): Promise<Runtime> {
  const rt = await startRuntimeProcess(KEY, 'runtime-', env);
  started.push(rt);
  return rt;
}

async function call(
  rt: Runtime,
  method: string,
  p: string,
  opts: { key?: string | null; json?: unknown; bytes?: Buffer } = {},
) {
  const headers: Record<string, string> = {};
  if (opts.key !== null) headers['X-Session-API-Key'] = opts.key ?? KEY;
  let body: string | Buffer | undefined;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.bytes) {
    headers['Content-Type'] = 'application/octet-stream';
    body = opts.bytes;
  }
  const res = await fetch(rt.url + p, { method, headers, body });
  const buf = Buffer.from(await res.arrayBuffer());
  let parsed: any = buf;
  if ((res.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(buf.toString('utf8'));
  return { status: res.status, body: parsed };
}

const bash = (rt: Runtime, json: unknown) => call(rt, 'POST', '/api/bash/execute_bash_command', { json });

describe('runtime', () => {
  let rt: Runtime;
  beforeAll(async () => {
    rt = await startRuntime({ RUNTIME_MAX_OUTPUT_BYTES: '1000', RUNTIME_MAX_UPLOAD_BYTES: '4096' });
  });
  afterAll(async () => {
    for (const r of started) if (r.child.exitCode === null) r.child.kill('SIGKILL');
  });

  it('answers /alive without a key; everything else needs the session key', async () => {
    expect(await call(rt, 'GET', '/alive', { key: null })).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await call(rt, 'GET', '/health', { key: null })).toEqual({
      status: 401,
      body: { detail: 'Missing X-Session-API-Key header' },
    });
    expect((await call(rt, 'GET', '/health', { key: 'x'.repeat(KEY.length) })).status).toBe(401);
    expect(
      (await call(rt, 'POST', '/api/bash/execute_bash_command', { key: 'nope', json: { command: 'true' } })).status,
    ).toBe(401);
    const health = await call(rt, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', working_dir: rt.workdir });
  });

  it('runs commands in the working directory with their exit code and both output streams', async () => {
    const ok = await bash(rt, { command: 'echo hello; echo oops >&2; pwd' });
    expect(ok.status).toBe(200);
    expect(ok.body.exit_code).toBe(0);
    expect(ok.body.timed_out).toBe(false);
    expect(ok.body.output).toContain('hello');
    expect(ok.body.output).toContain('oops');
    expect(ok.body.output).toContain(fs.realpathSync(rt.workdir));
    expect((await bash(rt, { command: 'exit 3' })).body.exit_code).toBe(3);
    fs.mkdirSync(path.join(rt.workdir, 'sub'), { recursive: true });
    expect((await bash(rt, { command: 'pwd', cwd: 'sub' })).body.output.trim()).toBe(
      path.join(fs.realpathSync(rt.workdir), 'sub'),
    );
    expect((await bash(rt, { command: 'pwd', cwd: '../' })).status).toBe(400);
    expect((await bash(rt, { command: 'pwd', cwd: 'missing' })).status).toBe(400);
    expect((await bash(rt, { command: 'echo "k=$SESSION_API_KEY"' })).body.output.trim()).toBe('k=');
  });

  it('kills a command and its process group at the timeout', async () => {
    const pidFile = path.join(rt.workdir, 'sleeper.pid');
    const t0 = Date.now();
    const r = await bash(rt, { command: `sleep 30 & echo $! > ${pidFile}; wait`, timeout: 0.5 });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(r.body).toMatchObject({ exit_code: -1, timed_out: true });
    expect(r.body.output).toContain('timed out after 0.5 s');
    const sleeper = Number(fs.readFileSync(pidFile, 'utf8'));
    await sleep(100);
    const stat = readStat(sleeper);
    expect(stat === null || stat.state === 'Z').toBe(true);
  });

  it('caps the output and says how much was left out', async () => {
    const r = await bash(rt, { command: 'head -c 5000 /dev/zero | tr "\\0" a' });
    expect(r.body.exit_code).toBe(0);
    expect(r.body.output.startsWith('a'.repeat(1000))).toBe(true);
    expect(r.body.output).toContain('[output truncated: 4000 more bytes]');
  });

  it('answers an invalid command body with 422', async () => {
    for (const [body, loc] of [
      [{}, ['body', 'command']],
      [{ command: 'ls', shell: 'zsh' }, ['body', 'shell']],
      [{ command: 'ls', timeout: 0 }, ['body', 'timeout']],
    ] as const) {
      const r = await bash(rt, body);
      expect(r.status).toBe(422);
      expect(r.body.detail[0].loc).toEqual(loc);
    }
  });

  it('uploads and downloads files byte for byte, creating directories', async () => {
    const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10, 13]);
    const up = await call(rt, 'POST', '/api/file/upload?path=dir/deeper/a.bin', { bytes });
    expect(up).toEqual({ status: 200, body: { path: 'dir/deeper/a.bin', size: bytes.length } });
    expect(fs.readFileSync(path.join(rt.workdir, 'dir/deeper/a.bin')).equals(bytes)).toBe(true);
    const down = await call(rt, 'GET', '/api/file/download?path=dir/deeper/a.bin');
    expect(down.status).toBe(200);
    expect((down.body as Buffer).equals(bytes)).toBe(true);
    expect((await call(rt, 'GET', '/api/file/download?path=nope.txt')).status).toBe(404);
    expect((await call(rt, 'GET', '/api/file/download?path=dir')).status).toBe(400);
    expect((await call(rt, 'GET', '/api/file/download')).status).toBe(422);
  });

  it('refuses paths that leave the working directory, also through a symbolic link, and writes nothing outside', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'runtime-outside-'));
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
    fs.symlinkSync(outside, path.join(rt.workdir, 'link'));
    for (const p of ['../escape.txt', '/etc/passwd', `${outside}/secret.txt`, 'link/secret.txt', 'link/new.txt']) {
      const down = await call(rt, 'GET', `/api/file/download?path=${encodeURIComponent(p)}`);
      expect(down.status).toBe(400);
      expect(down.body.detail).toContain('outside the working directory');
      const up = await call(rt, 'POST', `/api/file/upload?path=${encodeURIComponent(p)}`, { bytes: Buffer.from('x') });
      expect(up.status).toBe(400);
    }
    expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
    expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret');
    expect(fs.existsSync(path.join(path.dirname(rt.workdir), 'escape.txt'))).toBe(false);
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it('refuses an upload over the limit and leaves no file', async () => {
    const r = await call(rt, 'POST', '/api/file/upload?path=big.bin', { bytes: Buffer.alloc(5000, 1) });
    expect(r.status).toBe(413);
    expect(fs.readdirSync(rt.workdir).filter((f) => f.startsWith('big.bin'))).toEqual([]);
  });

  it('stops on SIGTERM, and by itself when its sandbox directory is removed', async () => {
    const a = await startRuntime();
    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);

    const sandboxDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runtime-sandbox-'));
    const b = await startRuntime({ RUNTIME_SANDBOX_DIR: sandboxDir });
    fs.rmSync(sandboxDir, { recursive: true });
    const code = await Promise.race([b.exited, sleep(6000).then(() => 'still running')]);
    expect(code).toBe(0);
  });
});
