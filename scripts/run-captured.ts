/** Running a command to its end with its output captured: the docker builds and the schema tool of the scripts. */
import { spawn } from 'node:child_process';

export interface RunCapturedOptions {
  env: NodeJS.ProcessEnv;
  /** Piped to the command's stdin; none: stdin is closed. */
  input?: NodeJS.ReadableStream;
  /** How many of the output's last lines a failure shows. */
  tailLines: number;
  /** The message of a failure, from the exit code and the output's last lines. */
  failure: (code: number | null, tail: string) => string;
}

/** stdout and stderr together, on exit 0; otherwise a rejection with `failure`'s message. */
export function runCaptured(command: string, args: string[], opts: RunCapturedOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: opts.env, stdio: [opts.input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(opts.failure(code, out.trim().split('\n').slice(-opts.tailLines).join('\n')))),
    );
    if (opts.input) opts.input.pipe(child.stdin!);
  });
}
