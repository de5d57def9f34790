/**
 * The OpenHands agent server's environment as the global setup installed it (scripts/servers/agent-server.ts):
 * exactly what the hash-checked locks name, at their versions, and nothing of the interpreter's own
 * site-packages (no package, no .pth file no lock names).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { agentServerLock, agentServerVersion } from '../scripts/servers/agent-server';
import { readAgentServerEnv } from '../src/process/agent-server-env';
import { testEnv } from './helpers/env';

/** name -> version of every pin in a lock file (markers aside), names normalized as pip lists them. */
const pins = (file: string) =>
  new Map(
    [...fs.readFileSync(file, 'utf8').matchAll(/^([A-Za-z0-9._-]+)==([^\s;\\]+)/gm)].map((m) => [
      m[1]!.toLowerCase().replace(/[._]/g, '-'),
      m[2]!,
    ]),
  );

describe('the installed OpenHands agent server', () => {
  const env = readAgentServerEnv(testEnv().agentServerDir)!;
  const run = (args: string[]) =>
    execFileSync(env.python, ['-I', ...args], {
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', ...(env.libDir ? { LD_LIBRARY_PATH: env.libDir } : {}) },
    });

  it('holds what the locks pin, at their versions, and nothing else', () => {
    expect(env.version).toBe(agentServerVersion());
    const locked = new Map([
      ...pins(agentServerLock()),
      ...pins(path.join(path.dirname(agentServerLock()), 'pip.lock')),
    ]);
    const installed = JSON.parse(run(['-m', 'pip', 'list', '--format=json'])) as { name: string; version: string }[];
    const unlocked = installed.filter((p) => locked.get(p.name.toLowerCase().replace(/[._]/g, '-')) !== p.version);
    expect(unlocked).toEqual([]);
    expect(installed.map((p) => p.name)).toEqual(
      expect.arrayContaining(['openhands-agent-server', 'openhands-sdk', 'openhands-tools']),
    );
    expect(run(['-m', 'pip', 'check'])).toContain('No broken requirements');
  });

  it('runs no .pth file of the interpreter it was made from', () => {
    const site = run(['-c', 'import site; print(site.getsitepackages()[0])']).trim();
    const pth = fs.readdirSync(site).filter((f) => f.endsWith('.pth'));
    // setuptools' own (locked in pip.lock) is the one expected.
    expect(pth.filter((f) => f !== 'distutils-precedence.pth')).toEqual([]);
  });
});
