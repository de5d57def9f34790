/**
 * What the start-task activities share: the task's record and its sealed secrets opened, the sandbox's
 * runtime (when this worker can reach it), and the shape of a step's input error and of printed output.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { SECRET_MASK } from '../src/schemas/secret-mask';
import { START_TASK_FAILURES } from '../src/temporal/shared';
import { SandboxRuntime } from './sandbox-runtime';
import type { StartTaskActivityDeps } from './start-task-activities';

/** A URL whose host is this machine's loopback as the process provider names it by default. */
const onLoopback = (url: string) => ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname);

/** Bad input: not retried, and its message is the ERROR detail the client sees. */
export const inputError = (message: string) => ApplicationFailure.nonRetryable(message, START_TASK_FAILURES.input);

/** Hides secret values (also URL-encoded, as in a clone URL) in what a command printed, before it becomes an error detail. */
export const masked = (text: string, secrets: Record<string, string>) =>
  Object.values(secrets)
    .filter((v) => v.length >= 4)
    .flatMap((v) => [v, encodeURIComponent(v)])
    .reduce((t, v) => t.split(v).join(SECRET_MASK), text);

export function startStepContext(deps: StartTaskActivityDeps) {
  const { startTasks, sandboxes, box } = deps;

  const task = async (taskId: string) => {
    const t = await startTasks.get(taskId);
    if (!t) throw inputError(`start task ${taskId} has no record`);
    return t;
  };
  const requestSecrets = async (taskId: string): Promise<Record<string, string>> => {
    const sealed = await startTasks.sealedSecrets(taskId);
    return sealed ? (JSON.parse(box.open(sealed)) as Record<string, string>) : {};
  };
  const runtime = async (sandboxId: string) => {
    const r = await sandboxes.get(sandboxId);
    if (!r) throw inputError(`sandbox ${sandboxId} does not exist`);
    const rt = SandboxRuntime.of(r, box);
    // 127.0.0.1 here is this machine, not the sandbox's host: what listens there is not its runtime, and
    // must not get its session key. (Retried: another worker, maybe of its host, may take the step.)
    if (r.host_queue && r.host_queue !== deps.hostQueue && onLoopback(rt.url)) {
      throw new Error(
        `the runtime of sandbox ${sandboxId} listens on ${rt.url} of its own host (task queue ${r.host_queue}), which this worker cannot reach: with workers on several hosts, set SANDBOX_PROCESS_HOST to an address of each host the others reach`,
      );
    }
    return rt;
  };
  /** The user's secrets with the request's over them. */
  const secretsOf = async (taskId: string, userId: string) =>
    (await deps.settings.resolve(userId, await requestSecrets(taskId))).secrets;

  return { task, requestSecrets, runtime, secretsOf };
}

export type StartStepContext = ReturnType<typeof startStepContext>;
