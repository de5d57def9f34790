/**
 * What the Temporal UI shows of each workflow (its static summary and details), and how a value a user
 * sent is quoted there. Workflow-safe: pure functions over the workflows' inputs.
 */
import type { StartAdmissionInput } from './admission-contract';
import type { CallbacksWorkflowInput } from './callbacks-contract';
import type { SandboxWorkflowInput } from './sandbox-contract';
import type { StartTaskWorkflowInput } from './start-task-contract';

/**
 * A value a user sent, as the Temporal UI may show it: one line, at most 120 characters, in JSON quotes
 * (so Markdown and look-alike text stay text).
 */
export function shown(value: string): string {
  // eslint-disable-next-line no-control-regex
  const line = value.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, ' ');
  return JSON.stringify(line.length > 120 ? `${line.slice(0, 119)}…` : line);
}

/**
 * What the Temporal UI shows for each workflow (its static summary and details), so an operator reads a
 * list of workflows without decoding payloads. Built from the inputs, which hold no secrets.
 */
export const workflowSummaries = {
  sandbox: (input: SandboxWorkflowInput) => ({
    staticSummary: `Sandbox ${input.sandboxId} of user ${input.ownerUserId}`,
  }),
  startTask: (input: StartTaskWorkflowInput) => {
    const r = input.request;
    const what = r.selected_repository
      ? `${shown(r.selected_repository)}${r.selected_branch ? ` branch ${shown(r.selected_branch)}` : ''}`
      : 'an empty workspace';
    // What the service knows first, then what the user sent, quoted: a request cannot dress itself up
    // as another user's start or add lines to the details.
    const details = [
      `- user: ${input.userId}`,
      `- conversation: ${input.taskId}`,
      `- repository: ${what}${r.git_provider ? ` (${shown(r.git_provider)})` : ''}`,
      `- sandbox: ${r.sandbox_id ? shown(r.sandbox_id) : 'a new one'}`,
      `- plugins: ${r.plugins?.length ?? 0}`,
    ];
    return { staticSummary: `Start for user ${input.userId}: ${what}`, staticDetails: details.join('\n') };
  },
  callbacks: (input: CallbacksWorkflowInput) => ({
    staticSummary: `Callbacks of conversation ${input.conversationId}`,
  }),
  startAdmission: (input: StartAdmissionInput) => ({
    staticSummary:
      input.organizationId !== undefined
        ? `Start line of organization ${input.organizationId}`
        : `Start line of user ${input.userId}`,
  }),
};
