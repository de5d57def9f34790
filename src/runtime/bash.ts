/**
 * Runs one shell command for the runtime's bash route: stdout and stderr interleaved as they come,
 * capped (the head is kept, the rest counted), and a timeout that kills the command's whole process
 * group. Background processes the command leaves behind keep running, as in a terminal.
 */
import { spawn } from 'node:child_process';
import { groupDeadline } from './process-group';

export interface BashResult {
  exit_code: number;
  output: string;
  timed_out: boolean;
}

export interface BashOptions {
  command: string;
  cwd: string;
  timeoutMs: number;
  maxOutputBytes: number;
  env: NodeJS.ProcessEnv;
  /** Kills the command's process group when aborted (an interrupted agent step). */
  signal?: AbortSignal;
}

/** After the shell exits, how long to keep reading output its leftover children still write. */
const DRAIN_MS = 100;

export function executeBash(o: BashOptions): Promise<BashResult> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', o.command], {
      cwd: o.cwd,
      env: o.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    let kept = 0;
    let dropped = 0;
    const collect = (d: Buffer) => {
      const room = o.maxOutputBytes - kept;
      if (room > 0) {
        const part = d.length <= room ? d : d.subarray(0, room);
        chunks.push(part);
        kept += part.length;
      }
      dropped += Math.max(0, d.length - Math.max(room, 0));
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);

    const deadline = groupDeadline(child, o.timeoutMs, o.signal);

    let settled = false;
    const finish = (code: number | null, error?: Error) => {
      if (settled) return;
      settled = true;
      deadline.clear();
      child.stdout.destroy();
      child.stderr.destroy();
      let output = Buffer.concat(chunks).toString('utf8');
      if (dropped > 0) output += `\n[output truncated: ${dropped} more bytes]`;
      if (deadline.timedOut) output += `\n[command timed out after ${o.timeoutMs / 1000} s and was killed]`;
      if (deadline.aborted) output += '\n[command interrupted and killed]';
      if (error) output += `\n[could not run the command: ${error.message}]`;
      resolve({ exit_code: deadline.timedOut || code === null ? -1 : code, output, timed_out: deadline.timedOut });
    };
    child.on('error', (e) => finish(null, e));
    child.on('close', (code) => finish(code));
    child.on('exit', (code) => setTimeout(() => finish(code), DRAIN_MS).unref());
  });
}
