/**
 * The start-task activities about the start's sandbox: getting one (the caller's, resumed, or a new
 * one), waiting until it runs, and deleting the one a failed start made for itself.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { setTimeout as sleep } from 'node:timers/promises';
import { DomainError, NotFound, TooMany } from '../src/errors';
import { START_TASK_FAILURES } from '../src/temporal/shared';
import { SandboxRuntime } from './sandbox-runtime';
import { inputError } from './start-step-context';
import type { StartTaskActivityDeps } from './start-task-activities';

export function createStartSandboxActivities(deps: StartTaskActivityDeps) {
  const { startTasks, sandboxes, box } = deps;

  return {
    /**
     * The caller's sandbox (resumed when paused), or a new one with the id the workflow chose, counted in
     * the organization whose line admitted the start (else the user's current one).
     */
    async acquireSandbox(input: {
      taskId: string;
      userId: string;
      sandboxId?: string;
      newSandboxId: string;
      organizationId?: string;
    }): Promise<string> {
      if (!input.sandboxId) {
        try {
          return (
            await deps.sandboxService.create(input.userId, undefined, 'body', input.newSandboxId, input.organizationId)
          ).id;
        } catch (e) {
          // Over the user's or the organization's quota: retrying soon would not change it; a start in line waits its turn
          // again, one without a line ends saying so.
          if (e instanceof TooMany) throw ApplicationFailure.nonRetryable(e.message, START_TASK_FAILURES.overQuota);
          throw e;
        }
      }
      const r = await sandboxes.getOwned(input.sandboxId, input.userId);
      if (!r) throw inputError(`Sandbox ${input.sandboxId} not found: sandbox_id must name one of your sandboxes`);
      if (r.status === 'DELETED')
        throw inputError(`Sandbox ${input.sandboxId} was deleted; start without sandbox_id to get a new one`);
      if (r.status !== 'RUNNING' && r.status !== 'STARTING') {
        try {
          await deps.sandboxService.operate(input.userId, input.sandboxId, 'resume');
        } catch (e) {
          const message = `Sandbox ${input.sandboxId} (${r.status}) could not be resumed: ${(e as Error).message}`;
          throw ApplicationFailure.nonRetryable(
            message,
            e instanceof TooMany ? START_TASK_FAILURES.overQuota : START_TASK_FAILURES.input,
          );
        }
      }
      await sandboxes.touch(r.id); // a start is use: no idle pause in the middle of it
      return r.id;
    },

    /** Waits until the sandbox runs; answers its agent server URL. */
    async waitForSandbox(input: { userId: string; sandboxId: string; timeoutMs: number }): Promise<string> {
      const deadline = Date.now() + input.timeoutMs;
      // A sandbox that is starting is usually RUNNING within a few hundred ms: looked at after 10 ms, then
      // each wait twice the last, up to 200 ms (a lookup by _id), so RUNNING is seen soon after it is written.
      for (let wait = 10; ; wait = Math.min(wait * 2, 200)) {
        const r = await sandboxes.get(input.sandboxId);
        if (!r) throw inputError(`sandbox ${input.sandboxId} does not exist`);
        if (r.status === 'RUNNING') return SandboxRuntime.of(r, box).url;
        if (r.status === 'ERROR' || r.status === 'DELETED' || r.status === 'MISSING') {
          throw inputError(`Sandbox ${input.sandboxId} is ${r.status}${r.status_detail ? `: ${r.status_detail}` : ''}`);
        }
        if (Date.now() > deadline) {
          throw inputError(
            `Sandbox ${input.sandboxId} did not run within ${Math.round(input.timeoutMs / 1000)} s (it is ${r.status}); START_SANDBOX_WAIT_MS sets the wait`,
          );
        }
        Context.current().heartbeat();
        await sleep(wait);
      }
    },

    /**
     * After a failed start: the sandbox it created for itself is deleted through the sandbox's workflow,
     * as DELETE /api/v1/sandboxes does, unless another conversation or start uses it by now (a request may
     * have named it meanwhile). Answers what became of it, for the ERROR detail. A delete the sandbox's
     * workflow refuses or does not answer is said so, not retried: the start's ERROR waits on this.
     */
    async deleteStartSandbox(input: { taskId: string; userId: string; sandboxId: string }): Promise<string | null> {
      const made = `The sandbox ${input.sandboxId} that this start created`;
      const used =
        (await deps.appConversations.otherUsesSandbox(input.sandboxId, input.taskId)) ||
        (await startTasks.startingIn(input.sandboxId, input.userId)).some((id) => id !== input.taskId);
      if (used) return `${made} is kept: another conversation uses it.`;
      try {
        await deps.sandboxService.operate(input.userId, input.sandboxId, 'delete');
      } catch (e) {
        if (e instanceof NotFound) return null;
        if (!(e instanceof DomainError)) throw e;
        return `${made} could not be deleted (${e.message}); delete it: DELETE /api/v1/sandboxes/${input.sandboxId}.`;
      }
      return `${made} was deleted.`;
    },
  };
}
