/**
 * The admin CLI (dist/src/cli/admin.js) run as a child of the launcher: the first run's bootstrap, the demo.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

/** Runs an admin command; its JSON answer is returned, or with `show` its text goes to the terminal. */
export function runAdmin(args: string[], env: NodeJS.ProcessEnv, show = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [path.join(__dirname, '..', 'src', 'cli', 'admin.js'), ...(show ? [] : ['--json']), ...args],
      {
        env,
        stdio: ['ignore', show ? 'inherit' : 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`admin ${args.join(' ')} exited with ${code}`)),
    );
  });
}
