/**
 * The conversation-callbacks workflow's part of the Temporal contract: its id, its events signal, its
 * input, and the range of events a round covers. Workflow-safe.
 */
import { defineSignal } from '@temporalio/workflow';

/** One callbacks workflow per conversation: it runs the conversation's callback processors on new events. */
export const callbacksWorkflowId = (conversationId: string) => `conversation-callbacks-${conversationId}`;

/** Signal to the callbacks workflow: events were stored; it processes all not yet processed. */
export const callbacksEventsSignal = defineSignal('events');

export interface CallbacksWorkflowInput {
  conversationId: string;
  /** The user who started the conversation (OwnerUserId); absent in runs started before it was sent. */
  ownerUserId?: string;
  /** A run with nothing new for this long ends (the next event starts another); absent: one hour, as before. */
  idleMs?: number;
}

/** The events a round of callbacks covers: seq in (fromSeq, toSeq]; `processors` is how many are registered. */
export interface CallbackRange {
  fromSeq: number;
  toSeq: number;
  processors: number;
}
