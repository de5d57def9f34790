/** finish: the agent says it is done; the run ends after this action. */
import { z } from 'zod';
import { defineTool } from './tool';

export const finishTool = defineTool({
  name: 'finish',
  description: 'Signal that the task is complete (or cannot be completed), with a final message for the user.',
  params: z.strictObject({ message: z.string().describe('What was done, or why it could not be done.') }),
  actionKind: 'FinishAction',
  observationKind: 'FinishObservation',
  async run(args) {
    return { text: args.message, isError: false, finish: true };
  },
});
