/** Pure logic of the agent: the skills a user's words trigger and the messages the conversation records. */
import {
  agentMessage,
  stopHookMessage,
  triggeredSkills,
  userMessage,
} from '../src/runtime/agent/conversation-messages';
import type { Completion } from '../src/runtime/agent/llm-protocol';
import { EventSchema } from '../src/schemas/events';

const skills = [
  { name: 'always', content: 'be nice', triggers: [] },
  { name: 'deploy', content: 'how to deploy', triggers: ['deploy', 'ship it'] },
  { name: 'db', content: 'how to migrate', triggers: ['Migration'] },
];
const record = (partial: Record<string, unknown>) =>
  EventSchema.parse({ id: 'e1', timestamp: '2026-01-01T00:00:00Z', ...partial });

describe('triggeredSkills', () => {
  it('finds triggers in any case, never sends a skill twice, and leaves always-on skills to the system prompt', () => {
    expect(triggeredSkills(skills, 'Please SHIP IT after the migration', new Set()).map((s) => s.name)).toEqual([
      'deploy',
      'db',
    ]);
    expect(triggeredSkills(skills, 'deploy again', new Set(['deploy']))).toEqual([]);
    expect(triggeredSkills(skills, 'be always nice', new Set())).toEqual([]);
  });
});

describe('messages', () => {
  it('adds the triggered skills and the hooks context to the user message', () => {
    const e = record(userMessage([{ text: 'deploy' }, { text: 'now' }], [skills[1]!], [null, 'branch is main', '']));
    expect(e).toMatchObject({
      kind: 'MessageEvent',
      source: 'user',
      llm_message: {
        role: 'user',
        content: [
          { type: 'text', text: 'deploy' },
          { type: 'text', text: 'now' },
        ],
      },
      activated_skills: ['deploy'],
      extended_content: [
        { type: 'text', text: '<skill name="deploy">\nhow to deploy\n</skill>' },
        { type: 'text', text: 'branch is main' },
      ],
    });
  });

  it('records the final answer with its response id, and a Stop hook reason (or a default) as a user turn', () => {
    const c = { id: 'resp-7', content: null } as Completion;
    expect(record(agentMessage(c))).toMatchObject({
      source: 'agent',
      llm_message: { role: 'assistant', content: [{ text: '' }] },
      llm_response_id: 'resp-7',
    });
    expect(record(stopHookMessage('tests fail'))).toMatchObject({
      source: 'hook',
      sender: 'Stop hook',
      llm_message: { role: 'user', content: [{ text: 'tests fail' }] },
    });
    expect(record(stopHookMessage(null))).toMatchObject({ llm_message: { content: [{ text: 'Continue.' }] } });
  });
});
