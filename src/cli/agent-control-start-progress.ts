/** How `agent-control start` shows a start: each status with the time it took, the current one live on a terminal. */
import type { StartTask } from '../client';
import { startEnded } from '../schemas/app-conversations';
import { terminalSafe } from './event-lines';
import { out } from './agent-control-output';

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** The start statuses as a list: each step with the time it took, the current one live on a terminal. */
export class StartProgress {
  private current: { status: string; since: number } | undefined;
  private readonly began = Date.now();
  constructor(private readonly tty: boolean) {}

  show(task: StartTask) {
    const now = Date.now();
    const status = terminalSafe(String(task.status));
    if (this.current?.status === status) return;
    if (this.current) this.finishLine(now);
    this.current = { status, since: now };
    if (startEnded(task.status)) {
      const mark = task.status === 'READY' ? '✓' : '✗';
      out(
        `  ${mark} ${status.padEnd(22)} total ${seconds(now - this.began)}${typeof task.detail === 'string' && task.detail ? `\n    ${task.detail.replace(/\n/g, '\n    ')}` : ''}`,
      );
      this.current = undefined;
    } else if (this.tty) process.stdout.write(`  … ${status}`);
  }

  private finishLine(now: number) {
    const line = `  ✓ ${this.current!.status.padEnd(22)} ${seconds(now - this.current!.since).padStart(6)}`;
    if (this.tty) process.stdout.write(`\r\x1b[2K${line}\n`);
    else out(line);
  }

  /** Ends a live line before anything else is printed. */
  interrupt() {
    if (this.tty && this.current) process.stdout.write('\n');
  }
}
