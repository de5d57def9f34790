/** Hooks run their command alone: none of the user's shell setup, whatever their stdin is. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HooksSchema } from '../src/runtime/agent/conversation-schemas';
import { runHooks } from '../src/runtime/agent/hooks';

describe('runtime hooks', () => {
  it("do not run the user's ~/.bashrc (bash reads it when stdin is a socket, as Node's pipes are)", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hook-home-'));
    const marker = path.join(home, 'bashrc-ran');
    fs.writeFileSync(path.join(home, '.bashrc'), `touch ${marker}\n`);
    fs.writeFileSync(path.join(home, '.bash_profile'), `touch ${marker}\n`);
    const hooks = HooksSchema.parse({
      PreToolUse: [{ matcher: 'terminal', command: 'cat >/dev/null; echo "no terminal" >&2; exit 2' }],
    });
    // A sandbox runtime's environment, as its provider gives it: no SHLVL, so the hook's bash is a top-level shell.
    const env = { PATH: process.env.PATH, HOME: home };
    const runs = await runHooks(
      hooks,
      'PreToolUse',
      { tool_name: 'terminal' },
      { cwd: home, env, toolName: 'terminal' },
    );
    expect(runs).toEqual([expect.objectContaining({ blocked: true, exit_code: 2, reason: 'no terminal' })]);
    expect(fs.existsSync(marker)).toBe(false);
    fs.rmSync(home, { recursive: true, force: true });
  });
});
