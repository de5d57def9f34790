/** SANDBOX_SPECS_FILE: what an operator may write, and the errors that name what is wrong. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../src/config';
import { loadSandboxSpecs } from '../src/sandboxes/spec-file';

describe('sandbox specs file', () => {
  let dir: string;
  beforeAll(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'specs-'))));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const load = (specs: unknown) => {
    const file = path.join(dir, `${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(file, JSON.stringify(specs));
    return loadSandboxSpecs(file);
  };
  const errorOf = (specs: unknown): readonly string[] => {
    try {
      load(specs);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as ConfigError).problems;
    }
    throw new Error('the file was accepted');
  };

  it('takes resource limits for a docker spec, and defaults them to none', () => {
    const [builtIn, openhands, limited, plain] = load([
      { id: 'small', provider: 'docker', image: 'runtime:1', memory_mb: 512, cpus: 0.5, pids_limit: 256 },
      { id: 'plain', provider: 'docker', image: 'runtime:1' },
    ]);
    expect(builtIn).toMatchObject({ id: 'local-process', runtime: 'built-in' });
    expect(openhands).toMatchObject({ id: 'local-process-openhands', runtime: 'openhands' });
    expect(limited).toMatchObject({ id: 'small', memory_mb: 512, cpus: 0.5, pids_limit: 256 });
    expect(plain).toMatchObject({ id: 'plain', runtime: 'built-in', memory_mb: null, cpus: null, pids_limit: null });
  });

  it.each([
    [{ memory_mb: 10 }, 'memory_mb'],
    [{ memory_mb: 1.5 }, 'memory_mb'],
    [{ cpus: 0 }, 'cpus'],
    [{ cpus: -1 }, 'cpus'],
    [{ pids_limit: 4 }, 'pids_limit'],
    [{ pids_limit: '100' }, 'pids_limit'],
  ])('refuses %j, naming the field', (limits, field) => {
    const problems = errorOf([{ id: 'bad', provider: 'docker', image: 'runtime:1', ...limits }]);
    expect(problems).toEqual([expect.stringContaining(`at [0][${field}]`)]);
  });
});
