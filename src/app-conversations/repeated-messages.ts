/**
 * A message sent again after an attempt whose answer was lost: whether the runtime got it the first time,
 * for runtimes that do not drop a repeated message by id themselves.
 */
import { textOf, type RuntimeClient, type RuntimeMessage } from '../sandboxes/runtime-client';
import type { PendingMessagesStore } from '../store/pending-messages-store';

/**
 * For a runtime that does not drop a repeated message by id: whether an earlier attempt of this one got
 * through (a user message with its text is in the runtime's log from that attempt's time on). The first
 * attempt's time is recorded otherwise. Two limits: a message with the same text sent by other means
 * after the first attempt is taken for it, and an attempt the runtime is still holding (busy with a
 * step) when the retry looks is not seen, so both land.
 */
export async function deliveredBefore(
  pendingMessages: PendingMessagesStore,
  runtime: RuntimeClient,
  conversationId: string,
  message: RuntimeMessage & { id: string },
  timeoutMs: number,
): Promise<boolean> {
  if (runtime.dropsRepeatedMessages || !runtime.eventLog) return false;
  const first = await pendingMessages.firstAttempt(conversationId, message.id);
  // The runtime's clock is this machine's or close to it: a few seconds of slack.
  if (
    first !== null &&
    (await runtime.eventLog.hasUserMessage(
      conversationId,
      textOf(message.content),
      new Date(first.getTime() - 5000),
      timeoutMs,
    ))
  )
    return true;
  if (first === null) await pendingMessages.recordFirstAttempt(conversationId, message.id, new Date());
  return false;
}
