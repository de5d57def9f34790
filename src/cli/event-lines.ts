/**
 * What the CLIs print about the service's data, made safe for a terminal: text from an agent, a
 * repository or a sandbox reaches the user's screen, so control characters (cursor moves, OSC 52
 * clipboard writes, hidden text) and bidirectional overrides are shown escaped, never sent raw.
 */
import type { Event as ClientEvent } from '../client';
import type { Event } from '../schemas/events';

/**
 * C0 controls but tab and newline (a carriage return could overwrite what the line showed), DEL, C1
 * controls, and bidi overrides and isolates.
 */
const PAST_C0 = '\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069';
const UNSAFE = new RegExp(`[\u0000-\u0008\u000b-\u001f${PAST_C0}]`, 'g');
const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `text` with every character a terminal would act on shown as \uXXXX. */
export const terminalSafe = (text: string): string => text.replace(UNSAFE, escaped);

/** JSON for a terminal or a script, the same value: JSON.stringify escapes C0 controls in strings; the rest of UNSAFE is escaped here. */
export const safeJson = (value: unknown, indent?: number): string =>
  (JSON.stringify(value, null, indent) ?? 'null').replace(new RegExp(`[${PAST_C0}]`, 'g'), escaped);

const clip = (s: string, n = 90) => {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};

const texts = (c: unknown) =>
  Array.isArray(c)
    ? c.map((x: { text?: unknown } | null) => (typeof x?.text === 'string' ? x.text : '')).join(' ')
    : '';

/** One readable line per event (raw: see `eventLine` for the terminal). */
export function describeEvent(event: Event | ClientEvent): string {
  const e = event as Event;
  try {
    switch (e.kind) {
      case 'SystemPromptEvent':
        return `tools: ${e.tools.map((t) => (t as { function?: { name?: string } } | null)?.function?.name).join(', ')}`;
      case 'MessageEvent':
        return `${e.source}: ${clip(texts(e.llm_message.content))}`;
      case 'ActionEvent': {
        const { kind: _k, ...args } = e.action ?? {};
        const thought = texts(e.thought);
        return `${e.tool_name} ${clip(JSON.stringify(args), 70)}${thought ? `  (${clip(thought, 50)})` : ''}`;
      }
      case 'ObservationEvent':
        return `${e.tool_name} -> ${clip(texts(e.observation.content))}`;
      case 'ConversationStateUpdateEvent': {
        const usage =
          e.key === 'metrics'
            ? (
                e.value as
                  { accumulated_token_usage?: { prompt_tokens: number; completion_tokens: number } } | undefined
              )?.accumulated_token_usage
            : undefined;
        return usage
          ? `tokens so far: ${usage.prompt_tokens} in, ${usage.completion_tokens} out`
          : `${e.key} = ${clip(JSON.stringify(e.value) ?? '', 70)}`;
      }
      case 'AgentErrorEvent':
        return `${e.tool_name}: ${clip(e.error)}`;
      case 'ConversationErrorEvent':
        return `${e.code}: ${clip(e.detail)}`;
      default:
        return '';
    }
  } catch {
    // An event not shaped as its kind says (the service stores what runtimes send): shown as it is.
    return clip(JSON.stringify(event) ?? '');
  }
}

/** An event as one terminal line: time, kind, what it says. */
export function eventLine(e: ClientEvent): string {
  const x = e as { timestamp?: unknown; kind?: unknown };
  const time = typeof x.timestamp === 'string' ? x.timestamp.slice(11, 19) : '        ';
  return terminalSafe(`${time} ${String(x.kind).padEnd(29)} ${describeEvent(e)}`);
}
