/**
 * Reaching a conversation's runtime through the control plane: its sandbox running (resumed, or waited
 * for while it starts, within a bound), or the domain error that says why not.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Conflict, Unavailable } from '../errors';
import type { RuntimeClient } from '../sandboxes/runtime-client';
import { runtimeClient } from '../sandboxes/runtime-clients';
import type { AppConversationRecord } from '../store/app-conversations-store';
import type { ConversationServiceDeps } from './conversation-service';

/**
 * The conversation's runtime, running. A paused sandbox is resumed when `resume` says so; one that is
 * starting is waited for (bounded); a deleted one is a Conflict, one in ERROR Unavailable.
 */
export async function runningRuntime(
  deps: Pick<ConversationServiceDeps, 'sandboxes' | 'sandboxService' | 'box' | 'settings'>,
  userId: string,
  c: AppConversationRecord,
  resume: boolean,
): Promise<{ runtime: RuntimeClient; resumed: boolean }> {
  if (!c.sandbox_id) throw new Conflict(`Conversation ${c.id} has no sandbox`);
  let sandbox = await deps.sandboxes.getOwned(c.sandbox_id, userId);
  if (!sandbox || sandbox.status === 'DELETED' || sandbox.status === 'MISSING') {
    throw new Conflict(
      `The sandbox of conversation ${c.id} is gone (${sandbox?.status ?? 'deleted'}); start a new conversation`,
    );
  }
  let resumed = false;
  if (sandbox.status === 'PAUSED') {
    if (!resume)
      throw new Conflict(
        `The sandbox of conversation ${c.id} is paused; resume it (POST /api/v1/sandboxes/${c.sandbox_id}/resume) or send a message`,
      );
    await deps.sandboxService.operate(userId, c.sandbox_id, 'resume');
    resumed = true;
  }
  const deadline = Date.now() + deps.settings.sandboxWaitMs;
  for (;;) {
    sandbox = await deps.sandboxes.get(c.sandbox_id);
    if (sandbox?.status === 'RUNNING') break;
    if (sandbox?.status === 'ERROR')
      throw new Unavailable(
        `The sandbox of conversation ${c.id} is in ERROR: ${sandbox.status_detail ?? 'no detail'}; resume it or start a new conversation`,
      );
    if (sandbox?.status !== 'STARTING' && !resumed)
      throw new Conflict(`The sandbox of conversation ${c.id} is ${sandbox?.status ?? 'gone'}`);
    if (Date.now() >= deadline) {
      throw new Unavailable(
        `The sandbox of conversation ${c.id} did not run within ${Math.round(deps.settings.sandboxWaitMs / 1000)} s (it is ${sandbox?.status}); try again shortly`,
        5,
      );
    }
    await sleep(250);
  }
  deps.sandboxService.touch(c.sandbox_id);
  return { runtime: runtimeClient(sandbox, deps.box), resumed };
}
