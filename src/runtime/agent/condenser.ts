/**
 * History condensation: when the LLM view holds more than `max_size` events (or a client asked for it), the
 * events between the kept head and the newer half are forgotten and replaced by a summary the LLM writes. The cut never
 * separates an action from what answered it.
 */
import type { CondenserSchema } from './conversation-schemas';
import { observationText, type ViewItem } from './llm-view';
import type { z } from 'zod';

export type CondenserSettings = z.output<typeof CondenserSchema>;

export interface CondensationPlan {
  forgotten: string[];
  /** The text of what is forgotten (and an earlier summary), for the summarizing call. */
  material: string;
  summaryOffset: number;
}

/** A message's content with its image URLs named, not quoted (a data: URL holds the whole image). */
const withoutImageData = (content: unknown): unknown =>
  Array.isArray(content)
    ? content.map((c) => {
        const block = c as { type?: unknown; image_urls?: unknown };
        return block?.type === 'image' && Array.isArray(block.image_urls)
          ? { type: 'image', images: block.image_urls.length }
          : c;
      })
    : content;

const ANSWERS = new Set(['ObservationEvent', 'AgentErrorEvent', 'UserRejectObservation']);

function describe(item: ViewItem): string {
  switch (item.kind) {
    case 'summary':
      return `Earlier summary: ${item.summary}`;
    case 'SystemPromptEvent':
      return 'System prompt';
    case 'MessageEvent':
      return `${item.source} message${item.llm_message.role && item.llm_message.role !== 'user' && item.source !== 'agent' ? ` (role ${String(item.llm_message.role)})` : ''}: ${JSON.stringify(withoutImageData(item.llm_message.content))}`;
    case 'ActionEvent':
      return `Action ${item.tool_name}: ${JSON.stringify(item.action ?? item.tool_call)}`;
    case 'ObservationEvent':
      return `Observation of ${item.tool_name}: ${observationText(item.observation).slice(0, 2000)}`;
    case 'AgentErrorEvent':
      return `Error of ${item.tool_name}: ${item.error}`;
    case 'UserRejectObservation':
      return `Rejected ${item.tool_name}: ${item.rejection_reason}`;
  }
}

/** Default head kept by a requested condensation in a conversation without a condenser. */
const KEEP_FIRST = 2;

/**
 * What to forget: nothing while the view fits `max_size`; past it (or when `forced` by a
 * CondensationRequest), everything between the kept head and the newest half (of max_size, or of the view).
 */
export function planCondensation(
  view: readonly ViewItem[],
  settings: CondenserSettings | null,
  forced = false,
): CondensationPlan | null {
  if (!forced && (!settings || view.length <= settings.max_size)) return null;
  // Both cuts fall where a group starts (a message, or the first action of an LLM response), never at an
  // answer: an action and what answered it are kept or forgotten together.
  const startsGroup = (i: number) => {
    const it = view[i]!;
    if (ANSWERS.has(it.kind)) return false;
    if (it.kind !== 'ActionEvent') return true;
    const prev = view[i - 1];
    return !(prev?.kind === 'ActionEvent' && prev.llm_response_id === it.llm_response_id);
  };
  let head = Math.min(settings?.keep_first ?? KEEP_FIRST, view.length);
  while (head < view.length && !startsGroup(head)) head++;
  const keep = Math.floor((forced ? view.length : settings!.max_size) / 2);
  let tail = Math.max(head, view.length - keep);
  while (tail < view.length && !startsGroup(tail)) tail++;
  const middle = view.slice(head, tail);
  const forgotten = middle.flatMap((it) => (it.kind === 'summary' ? [] : [it.id]));
  if (forgotten.length === 0) return null;
  return { forgotten, material: middle.map(describe).join('\n'), summaryOffset: head };
}

export const SUMMARY_INSTRUCTIONS =
  'You maintain the memory of a software agent. Summarize the events below so the agent can go on without them: ' +
  'the task, what was done, files changed, what is left. Be concise and factual.';
