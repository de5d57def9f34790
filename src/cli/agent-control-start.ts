/**
 * `agent-control start`: starts a conversation, shows each start status with its time, then follows the
 * agent until it finishes; Ctrl-C detaches (the start goes on) and says how to reattach.
 */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { ProtocolError, UnreachableError, type AgentControlClient, type StartRequest, type StartTask } from '../client';
import { EXIT } from './exit-codes';
import { StartFailedError } from './agent-control-errors';
import { follow } from './agent-control-events';
import { json, jsonOption, note, out } from './agent-control-output';
import { client, interruptSignal } from './agent-control-session';
import { StartProgress } from './agent-control-start-progress';

interface StartOptions {
  repository?: string;
  branch?: string;
  message: string;
  model?: string;
  title?: string;
  follow: boolean;
  json?: boolean;
}

export function addStartCommand(program: Command) {
  program
    .command('start')
    .description(
      'start a conversation: shows each start status with its time, then follows the agent until it finishes (Ctrl-C detaches, the start goes on)',
    )
    .option('-r, --repository <owner/name>', 'the repository to work on')
    .option('-b, --branch <branch>', 'its branch')
    .requiredOption('-m, --message <text>', 'the task for the agent')
    .option('--model <model>', "the LLM model (default: your organization's)")
    .option('--title <title>', 'a title for the conversation')
    .option('--no-follow', 'exit once the conversation is READY')
    .addOption(jsonOption())
    .action(start);
}

async function start(o: StartOptions) {
  const c = client();
  const ac = interruptSignal();
  const progress = new StartProgress(!o.json && process.stdout.isTTY === true);
  // Chosen here, so a detach before the first status still says how to reattach (the same id joins the start).
  const conversationId = randomUUID();
  const last = await showStart(c, startRequest(conversationId, o), o.json, progress, ac.signal);
  if (ac.signal.aborted) {
    progress.interrupt();
    detached(`detached; the start goes on. See it with:\n  agent-control tasks show ${last?.id ?? conversationId}`);
    return;
  }
  const ready = readyTask(c, last, o.json);
  if (!o.json) out(`conversation ${ready.app_conversation_id} (sandbox ${ready.sandbox_id})`);
  if (!o.follow) return;
  await follow(c, ready.app_conversation_id, { json: o.json, untilFinished: true }, ac.signal);
  if (ac.signal.aborted)
    detached(
      `detached; the conversation goes on. Reattach with:\n  agent-control events tail ${ready.app_conversation_id}`,
    );
}

function startRequest(conversationId: string, o: StartOptions): Partial<StartRequest> {
  return {
    conversation_id: conversationId,
    selected_repository: o.repository ?? null,
    selected_branch: o.branch ?? null,
    llm_model: o.model ?? null,
    title: o.title ?? null,
    initial_message: {
      role: 'user' as const,
      content: [{ type: 'text' as const, text: o.message, cache_prompt: false }],
      run: true,
    },
  };
}

/** Shows each start task the stream brings (a line or a JSON object); the last one, if any came. */
async function showStart(
  c: AgentControlClient,
  request: Partial<StartRequest>,
  asJson: boolean | undefined,
  progress: StartProgress,
  signal: AbortSignal,
): Promise<StartTask | undefined> {
  let last: StartTask | undefined;
  for await (const task of c.startConversation(request, signal)) {
    if (!last && !asJson) out(`start task ${task.id}`);
    last = task;
    if (asJson) json(task);
    else progress.show(task);
  }
  return last;
}

/** The start task the stream ended with, when READY; any other end throws the error its exit code is for. */
function readyTask(
  c: AgentControlClient,
  last: StartTask | undefined,
  asJson: boolean | undefined,
): StartTask & { app_conversation_id: string } {
  if (!last) throw new ProtocolError(c.baseUrl, 'the start stream held no start task');
  // The progress list showed the detail; --json leaves stderr to say it.
  if (last.status === 'ERROR')
    throw new StartFailedError(
      asJson ? `the start ended in ERROR: ${last.detail ?? ''}` : 'the start ended in ERROR (its detail above)',
    );
  if (last.status !== 'READY') throw new UnreachableError(c.baseUrl, new Error(`the stream ended at ${last.status}`));
  if (typeof last.app_conversation_id !== 'string')
    throw new ProtocolError(c.baseUrl, 'READY without an app_conversation_id');
  return { ...last, app_conversation_id: last.app_conversation_id };
}

/** Ctrl-C ended the command, not what it watched: `how` says what goes on and how to see it again. */
function detached(how: string) {
  note(how);
  process.exitCode = EXIT.DETACHED;
}
