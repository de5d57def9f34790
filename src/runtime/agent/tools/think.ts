/** think: the agent writes down its reasoning; nothing runs. */
import { z } from 'zod';
import { defineTool } from './tool';

export const thinkTool = defineTool({
  name: 'think',
  description: 'Write down a thought: reasoning, a plan, a hypothesis. Nothing is executed and nothing changes.',
  params: z.strictObject({ thought: z.string().min(1).describe('The thought to log.') }),
  actionKind: 'ThinkAction',
  observationKind: 'ThinkObservation',
  async run() {
    return { text: 'Your thought has been logged.', isError: false };
  },
});
