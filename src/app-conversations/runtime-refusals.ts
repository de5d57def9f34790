/**
 * A sandbox runtime's answer other than 2xx, in the domain's terms: what a conversation call's refusal
 * and a workspace read's refusal mean for the client.
 */
import { BadRequest, Conflict, Unavailable, UpstreamFailed } from '../errors';
import type { RuntimeAnswer } from '../sandboxes/runtime-client';
import type { AppConversationRecord } from '../store/app-conversations-store';

/** The runtime's own words for a refusal: its `detail`, else the start of its body. */
export const detailOf = (a: RuntimeAnswer) => {
  const d = (a.body as { detail?: unknown } | null)?.detail;
  return typeof d === 'string' ? d : JSON.stringify(a.body ?? '').slice(0, 300);
};

/** A runtime answer other than 2xx, in the domain's terms (a 404 of a conversation call: the runtime lost it). */
export function runtimeRefusal(c: AppConversationRecord, a: RuntimeAnswer): Error {
  if (a.status === 404)
    return new Conflict(`Conversation ${c.id} is not in its sandbox any more (the runtime does not know it)`);
  return workspaceRefusal(a);
}

/** A runtime answer other than 2xx to a workspace read: its 404 is about the path, not the conversation. */
export function workspaceRefusal(a: RuntimeAnswer): Error {
  if (a.status === 409) return new Conflict(detailOf(a));
  if (a.status === 400 || a.status === 404 || a.status === 413 || a.status === 422) return new BadRequest(detailOf(a));
  if (a.status === 503) return new Unavailable(`The sandbox's agent server is busy: ${detailOf(a)}`, 5);
  return new UpstreamFailed(`The sandbox's agent server answered ${a.status}: ${detailOf(a)}`);
}
