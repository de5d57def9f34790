/**
 * The callbacks workflow (`conversation-callbacks-<conversation id>`): runs the conversation's callback
 * processors on the events stored since the last round. Ingest only signals it, so a slow or failing
 * target never slows ingest; each processor is an activity of its own with its own retries, so one
 * failing target does not hold the others back. What was processed is kept in MongoDB, so a new run
 * (after a quiet spell, CALLBACKS_IDLE_MS, ended the last one) goes on from there.
 */
import {
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { callbacksEventsSignal, SEARCH_ATTRIBUTE_KEYS, type CallbacksWorkflowInput } from '../src/temporal/shared';
import { CALLBACK_ACTIVITY_OPTIONS } from './activity-options';

const { callbackRange, markCallbacksProcessed } = proxyActivities<Activities>(CALLBACK_ACTIVITY_OPTIONS.bookkeeping);
const { runCallback } = proxyActivities<Activities>(CALLBACK_ACTIVITY_OPTIONS.target);
const HOUR_MS = 60 * 60_000;

export async function conversationCallbacksWorkflow(input: CallbacksWorkflowInput): Promise<void> {
  let pending = true; // started by a signal: something is new
  setHandler(callbacksEventsSignal, () => void (pending = true));
  // Found by its conversation in the Temporal UI; runs recorded before the attribute replay without it.
  if (patched('callbacks-search-attributes'))
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTE_KEYS.ConversationId, value: input.conversationId }]);
  // Found by its owner too, idle for the bound it was given, its wait named in the UI; runs recorded
  // before replay as they ran (one hour, no owner, an unnamed timer).
  const ownedAndBounded = patched('callbacks-owner-idle-bound');
  if (ownedAndBounded && input.ownerUserId)
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTE_KEYS.OwnerUserId, value: input.ownerUserId }]);
  const idle = ownedAndBounded ? (input.idleMs ?? HOUR_MS) : HOUR_MS;
  const quiet = (): Promise<boolean> =>
    ownedAndBounded
      ? condition(() => pending, idle, { summary: `wait for new events; ${idle / 1000} s idle ends this run` })
      : condition(() => pending, '1 hour');
  for (;;) {
    if (!(await quiet())) return; // quiet: the next stored event starts a new run
    pending = false;
    const range = await callbackRange(input.conversationId);
    if (range.toSeq > range.fromSeq) {
      const rounds = Array.from({ length: range.processors }, (_, i) =>
        // A processor that still fails after its retries has its failure recorded by the activity; the others go on.
        runCallback(input.conversationId, i, range.fromSeq, range.toSeq).catch(() => undefined),
      );
      await Promise.all(rounds);
      await markCallbacksProcessed(input.conversationId, range.toSeq);
    }
    if (workflowInfo().continueAsNewSuggested && !pending)
      return continueAsNew<typeof conversationCallbacksWorkflow>(input);
  }
}
