/**
 * Deleting a conversation with everything kept for it: its sandbox (or only the runtime's copy when
 * another conversation uses the sandbox), its event log, callbacks, states, queued messages, its
 * callbacks workflow, its start task, and last its record.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { NotFound, Unavailable } from '../errors';
import { runtimeClient } from '../sandboxes/runtime-clients';
import type { ConversationServiceDeps } from './conversation-service';
import { callbacksWorkflowId } from '../temporal/shared';

/**
 * Deletes conversation `id` of `userId` (its start has ended), its log and everything kept for it; its
 * sandbox too when no other conversation runs there (else only the runtime's copy of the conversation
 * goes). The record goes last: a delete cut short is finished by the next one.
 */
export async function deleteConversationAndLog(
  deps: ConversationServiceDeps,
  userId: string,
  id: string,
  sandboxId: string | null,
): Promise<void> {
  await deleteOrLeaveSandbox(deps, userId, id, sandboxId);
  // The event record first: its session key is what the runtime reports with, so nothing more lands.
  // Under the conversation's ingest lease: a batch being stored now finishes before the log goes, and
  // none after it authenticates.
  const lease = await deps.conversations.acquireIngestLease(id, 30_000, 15_000);
  if (!lease) throw new Unavailable(`Events of conversation ${id} are being stored; delete it again shortly`, 2);
  try {
    await deps.conversations.delete(id);
    await deps.events.deleteConversation(id);
  } finally {
    await deps.conversations.releaseIngestLease(id, lease).catch(() => undefined);
  }
  await Promise.all([
    deps.callbacks.deleteConversation(id),
    deps.conversationStates.delete(id),
    deps.pendingMessages.deleteAll(id),
    stopCallbacks(deps, id),
  ]);
  await deps.startTasks.delete(id);
  await deps.appConversations.delete(id);
}

/** The conversation's sandbox goes when nothing else uses it; else only the runtime's copy of the conversation. */
async function deleteOrLeaveSandbox(
  deps: ConversationServiceDeps,
  userId: string,
  id: string,
  sandboxId: string | null,
): Promise<void> {
  const shared = sandboxId
    ? (await deps.appConversations.otherUsesSandbox(sandboxId, id)) ||
      (await deps.startTasks.startingIn(sandboxId, userId)).some((t) => t !== id)
    : false;
  if (sandboxId && !shared) {
    await deps.sandboxService.operate(userId, sandboxId, 'delete').catch((e: unknown) => {
      if (!(e instanceof NotFound)) throw e;
    });
  } else if (sandboxId) {
    const sandbox = await deps.sandboxes.get(sandboxId);
    if (sandbox?.status === 'RUNNING') {
      // Best effort: the sandbox stays for its other conversations; its copy of this one is only disk.
      await runtimeClient(sandbox, deps.box)
        .deleteConversation(id, deps.settings.runtimeCallTimeoutMs)
        .catch(() => undefined);
    }
  }
}

/** Ends the conversation's callbacks workflow (one that never ran or has ended is no error). */
async function stopCallbacks(deps: Pick<ConversationServiceDeps, 'temporal'>, id: string): Promise<void> {
  try {
    await deps.temporal.workflow.getHandle(callbacksWorkflowId(id)).terminate('the conversation was deleted');
  } catch (e) {
    if (!(e instanceof WorkflowNotFoundError)) throw e;
  }
}
