/**
 * The start's way into a sandbox: its runtime's client (whichever agent server it runs), with the calls
 * that can take long heartbeating so a dead worker is noticed.
 */
import { Context } from '@temporalio/activity';
import type { SecretBox } from '../src/auth/secret-box';
import type {
  BashResult,
  ConversationStart,
  Created,
  RuntimeAnswer,
  RuntimeClient,
} from '../src/sandboxes/runtime-client';
import { runtimeClient } from '../src/sandboxes/runtime-clients';
import type { SandboxRecord } from '../src/store/sandboxes-store';

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

export class SandboxRuntime {
  private constructor(private readonly client: RuntimeClient) {}

  static of(record: SandboxRecord, box: SecretBox): SandboxRuntime {
    return new SandboxRuntime(runtimeClient(record, box));
  }

  get url(): string {
    return this.client.url;
  }

  /** Runs a bash command in the sandbox (cwd relative to its working directory). */
  bash(command: string, opts: { cwd?: string; timeoutS?: number } = {}): Promise<BashResult> {
    return heartbeating(this.client.bash(command, { cwd: opts.cwd ?? '.', timeoutS: opts.timeoutS ?? 120 }));
  }

  createConversation(start: ConversationStart): Promise<Created> {
    return heartbeating(this.client.createConversation(start, 60_000));
  }

  upload(filePath: string, content: Uint8Array, timeoutMs: number): Promise<RuntimeAnswer> {
    return this.client.upload(filePath, content, timeoutMs);
  }
}
