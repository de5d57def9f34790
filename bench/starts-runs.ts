/**
 * One start of bench:starts, made two ways: a stream-start through the typed client read to its end, and
 * the same steps made raw (the runtime's calls, and the status and record writes with the driver).
 */
import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import {
  cloneCommand,
  HOOK_COMMAND,
  SETUP_SCRIPT,
  SKILLS_DIR,
  skillFilesCommand,
} from '../activities/repository-steps';
import type { AgentControlClient } from '../src/client';
import type { ConversationStart, RuntimeClient } from '../src/sandboxes/runtime-client';

export interface StreamStart {
  /** The start task's id (of its first status). */
  id: string | undefined;
  /** From the request to the stream's end. */
  ms: number;
  statuses: string[];
  detail: string | null | undefined;
  /** For each status, the delay from its write (its updated_at) to its arrival at the client. */
  delays: number[];
}

/**
 * One stream-start read to its end through the typed client: its statuses, the time to READY, and for
 * each status the delay from its write (its updated_at) to its arrival at the client.
 */
export async function streamStart(client: AgentControlClient, sandboxId: string): Promise<StreamStart> {
  const t0 = performance.now();
  const tasks: { id: string; status: string; detail?: string | null }[] = [];
  const delays: number[] = [];
  for await (const task of client.startConversation({ sandbox_id: sandboxId })) {
    delays.push(Date.now() - Date.parse(task.updated_at));
    tasks.push(task);
  }
  return {
    id: tasks[0]?.id,
    ms: performance.now() - t0,
    statuses: tasks.map((s) => s.status),
    detail: tasks.at(-1)?.detail,
    delays,
  };
}

/** The conversation the raw steps create in the runtime: an LLM that is never called, no message. */
const rawConversation = (id: string): ConversationStart => ({
  id,
  llm: {
    model: 'bench',
    base_url: 'http://127.0.0.1:9/v1',
    api_key: null,
    temperature: null,
    top_p: null,
    max_output_tokens: null,
    stream: false,
    log_completions: false,
  },
  systemMessageSuffix: null,
  workingDir: 'project',
  initialMessage: null,
  maxIterations: 100,
  confirmationMode: false,
  secrets: {},
  skills: [],
});

/** The same steps made raw: the runtime calls, the status writes and records with the driver; its time in ms. */
export async function rawStart(db: Db, runtime: RuntimeClient, sandboxId: string): Promise<number> {
  const bash = (command: string, cwd: string, timeoutS: number) => runtime.bash(command, { cwd, timeoutS });
  const id = randomUUID();
  const tasks = db.collection<{ _id: string; status?: string; created_at?: Date }>('bench_start_tasks');
  const t0 = performance.now();
  await tasks.insertOne({ _id: id, status: 'WORKING', created_at: new Date() });
  const status = (s: string) => tasks.updateOne({ _id: id }, { $set: { status: s, updated_at: new Date() } });
  await status('WAITING_FOR_SANDBOX');
  await db.collection<{ _id: string }>('sandboxes').findOne({ _id: sandboxId });
  await status('PREPARING_REPOSITORY');
  await bash(cloneCommand('project', null, undefined), '.', 60);
  await status('RUNNING_SETUP_SCRIPT');
  await bash(`test -f ${SETUP_SCRIPT}`, 'project', 30);
  await status('SETTING_UP_GIT_HOOKS');
  await bash(HOOK_COMMAND, 'project', 60);
  await status('SETTING_UP_SKILLS');
  await bash(skillFilesCommand(SKILLS_DIR), 'project', 60);
  await status('STARTING_CONVERSATION');
  await db
    .collection<{ _id: string; created_at: Date }>('bench_conversations')
    .insertOne({ _id: id, created_at: new Date() });
  await db
    .collection<{ _id: string; created_at: Date }>('bench_app_conversations')
    .insertOne({ _id: id, created_at: new Date() });
  const created = await runtime.createConversation(rawConversation(id), 60_000);
  if (!created.created) throw new Error(`the runtime did not create the conversation: ${JSON.stringify(created)}`);
  await status('READY');
  return performance.now() - t0;
}
