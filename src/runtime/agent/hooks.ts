/**
 * Hooks: shell commands the conversation runs at fixed moments (before and after a tool, when a user
 * message arrives, at the start of the session, when the agent stops). Each gets a JSON description of the
 * moment on stdin. Exit 0 is success (stdout may be JSON with `decision: "deny"|"block"`, `reason`,
 * `additionalContext`); exit 2 blocks, with stderr as the reason; any other exit is a failed hook that
 * does not block. Every run is reported as a HookExecutionEvent.
 */
import { spawn } from 'node:child_process';
import { groupDeadline } from '../process-group';
import type { HOOK_EVENT_TYPES } from '../../schemas/events';
import type { Hook, Hooks } from './conversation-schemas';

export type HookEventType = (typeof HOOK_EVENT_TYPES)[number];

export interface HookRun {
  hook_event_type: HookEventType;
  hook_command: string;
  tool_name: string | null;
  success: boolean;
  blocked: boolean;
  exit_code: number;
  stdout: string;
  stderr: string;
  reason: string | null;
  additional_context: string | null;
  error: string | null;
  hook_input: Record<string, unknown>;
}

const MAX_OUTPUT = 64 * 1024;

function matches(hook: Hook, toolName: string | null): boolean {
  if (toolName === null || hook.matcher === '*' || hook.matcher === '') return true;
  if (hook.matcher === toolName) return true;
  try {
    return new RegExp(`^(?:${hook.matcher})$`).test(toolName);
  } catch {
    return false;
  }
}

function runOne(
  hook: Hook,
  input: Record<string, unknown>,
  cwd: string,
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
): Promise<{ code: number; stdout: string; stderr: string; error: string | null }> {
  return new Promise((resolve) => {
    // --norc --noprofile: the hook's stdin is a socket (how Node passes pipes), and bash takes a socket on
    // stdin for a remote shell and runs ~/.bashrc even with -c (here: pyenv's init, which can wait
    // forever on a stale rehash lock). A hook runs its command and nothing of the user's shell setup.
    const child = spawn('bash', ['--norc', '--noprofile', '-c', hook.command], {
      cwd,
      env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout = (stdout + d.toString('utf8')).slice(0, MAX_OUTPUT)));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(0, MAX_OUTPUT)));
    const deadline = groupDeadline(child, hook.timeout * 1000, signal); // an interrupted step does not wait for its hooks
    child.stdin.on('error', () => undefined); // a hook that does not read its input
    child.stdin.end(JSON.stringify(input));
    child.on('error', (e) => {
      deadline.clear();
      resolve({ code: -1, stdout, stderr, error: e.message });
    });
    child.on('close', (code) => {
      deadline.clear();
      resolve({
        code: deadline.timedOut ? -1 : (code ?? -1),
        stdout,
        stderr,
        error: deadline.timedOut ? `the hook did not finish within ${hook.timeout} s and was killed` : null,
      });
    });
  });
}

function decision(stdout: string): { deny: boolean; reason: string | null; additional: string | null } {
  try {
    const out = JSON.parse(stdout) as { decision?: string; reason?: string; additionalContext?: string };
    if (typeof out !== 'object' || out === null) return { deny: false, reason: null, additional: null };
    return {
      deny: out.decision === 'deny' || out.decision === 'block',
      reason: out.reason ?? null,
      additional: out.additionalContext ?? null,
    };
  } catch {
    return { deny: false, reason: null, additional: null };
  }
}

/** Runs the hooks of one moment in order; stops at the first that blocks. */
export async function runHooks(
  hooks: Hooks,
  type: HookEventType,
  input: Record<string, unknown>,
  opts: { cwd: string; env: NodeJS.ProcessEnv; toolName?: string | null; signal?: AbortSignal },
): Promise<HookRun[]> {
  const list = (hooks as Partial<Record<HookEventType, Hook[]>>)[type] ?? [];
  const runs: HookRun[] = [];
  const toolName = opts.toolName ?? null;
  for (const hook of list.filter((h) => matches(h, toolName))) {
    const hookInput = { hook_event_name: type, ...input };
    if (opts.signal?.aborted) break;
    const r = await runOne(hook, hookInput, opts.cwd, opts.env, opts.signal);
    const d = r.code === 0 ? decision(r.stdout) : { deny: false, reason: null, additional: null };
    const blocked = r.code === 2 || d.deny;
    runs.push({
      hook_event_type: type,
      hook_command: hook.command,
      tool_name: toolName,
      success: r.code === 0 || r.code === 2,
      blocked,
      exit_code: r.code,
      stdout: r.stdout,
      stderr: r.stderr,
      reason: blocked ? (d.reason ?? (r.stderr.trim() || `blocked by the ${type} hook`)) : d.reason,
      additional_context: d.additional,
      error: r.error ?? (r.code !== 0 && r.code !== 2 ? `the hook exited with ${r.code}` : null),
      hook_input: hookInput,
    });
    if (blocked) break;
  }
  return runs;
}
