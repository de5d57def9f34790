/**
 * The start's way into a sandbox: its runtime's HTTP API (bash commands, conversation creation), with
 * the session key read from the sandbox record. Long calls heartbeat so a dead worker is noticed.
 */
import { Context } from '@temporalio/activity';
import type { SecretBox } from '../src/auth/secret-box';
import { RuntimeClient } from '../src/sandboxes/runtime-client';
import type { SandboxRecord } from '../src/store/sandboxes-store';

export interface BashResult {
  exit_code: number;
  output: string;
  timed_out: boolean;
}

/** Heartbeats every two seconds while `work` runs, when called inside an activity. */
async function heartbeating<T>(work: Promise<T>): Promise<T> {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    ctx = undefined; // not in an activity
  }
  const timer = ctx ? setInterval(() => ctx!.heartbeat(), 2000) : undefined;
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/** The runtime as the start's steps use it: commands with heartbeats, and conversation creation. */
export class SandboxRuntime extends RuntimeClient {
  static override of(record: SandboxRecord, box: SecretBox): SandboxRuntime {
    return new SandboxRuntime(RuntimeClient.urlOf(record), box.open(record.session_key_sealed));
  }

  /** Runs a bash command in the sandbox (cwd relative to its working directory). */
  async bash(command: string, opts: { cwd?: string; timeoutS?: number } = {}): Promise<BashResult> {
    const timeoutS = opts.timeoutS ?? 120;
    const r = await heartbeating(this.call('POST', '/api/bash/execute_bash_command', { command, cwd: opts.cwd ?? '.', timeout: timeoutS }, (timeoutS + 30) * 1000));
    if (r.status !== 200) throw new Error(`the runtime refused the command (${r.status}): ${JSON.stringify(r.body).slice(0, 300)}`);
    return r.body as BashResult;
  }

  /** Creates a conversation in the runtime; answers its status and body (409 when it exists already). */
  createConversation(body: object): Promise<{ status: number; body: unknown }> {
    return this.call('POST', '/api/conversations', body, 60_000);
  }
}
