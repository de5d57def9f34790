/**
 * The MessageEvents a conversation records: a client's message (its role and content as sent) with the
 * skills its words trigger and the context its UserPromptSubmit hooks added, the agent's final answer,
 * and a Stop hook's reason to go on.
 */
import type { MessageContent } from '../../schemas/messages';
import { text, type NewEvent } from './conversation-events';
import type { Skill, UserMessage } from './conversation-schemas';
import type { Completion } from './llm-protocol';

/** Skills with a trigger the message contains (any case), each sent once per conversation: the agent keeps what it was given. */
export function triggeredSkills(skills: readonly Skill[], body: string, activated: ReadonlySet<string>): Skill[] {
  const lower = body.toLowerCase();
  return skills.filter(
    (s) => s.triggers.length > 0 && !activated.has(s.name) && s.triggers.some((t) => lower.includes(t.toLowerCase())),
  );
}

/** The text blocks of a message's content, one after the other (what hooks and skill triggers read). */
export const messageText = (content: MessageContent): string =>
  content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('\n');

type SentMessage = Pick<UserMessage, 'role' | 'content' | 'id'>;

/**
 * A client's message as the MessageEvent records it: its role and content as sent, under its id when it
 * has one. Plain text blocks stand for a user message of those texts.
 */
export function userMessage(
  sent: SentMessage | readonly { text: string }[],
  skills: readonly Skill[],
  hookContext: readonly (string | null)[],
): NewEvent {
  const message: SentMessage = Array.isArray(sent)
    ? { role: 'user', content: sent.map((c: { text: string }) => text(c.text)) }
    : (sent as SentMessage);
  return {
    ...(message.id ? { id: message.id } : {}),
    kind: 'MessageEvent',
    source: 'user',
    llm_message: { role: message.role, content: message.content },
    activated_skills: skills.map((s) => s.name),
    extended_content: [
      ...skills.map((s) => text(`<skill name="${s.name}">\n${s.content}\n</skill>`)),
      ...hookContext.flatMap((c) => (c ? [text(c)] : [])),
    ],
  };
}

/** An answer without tool calls: the agent considers the task done. */
export const agentMessage = (completion: Completion): NewEvent => ({
  kind: 'MessageEvent',
  source: 'agent',
  llm_message: { role: 'assistant', content: [text(completion.content ?? '')] },
  llm_response_id: completion.id,
});

/** A Stop hook that blocks sends the agent back to work with its reason. */
export const stopHookMessage = (reason: string | null): NewEvent => ({
  kind: 'MessageEvent',
  source: 'hook',
  sender: 'Stop hook',
  llm_message: { role: 'user', content: [text(reason ?? 'Continue.')] },
});
