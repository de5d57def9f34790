/**
 * The system prompt: what the agent is and how it works (static), the skills that are always on and the
 * organization's suffix; the dynamic context holds what changes per conversation (workspace, date).
 */
import type { CreateConversation } from './conversation-schemas';

const BASE = `You are a software engineering agent. You work in a sandbox on the user's repository through tools:
- terminal runs bash commands in the workspace;
- file_editor views, creates and edits files;
- think records your reasoning;
- task_tracker keeps a task list for longer work;
- finish ends the task with a message for the user.
Explore before you change things, make small verified edits, run the tests that exist, and call finish
when the task is done or cannot be done. Never print secrets; they are in your environment variables.`;

export function systemPrompt(settings: CreateConversation, workspace: string): { static: string; dynamic: string } {
  const always = settings.skills.filter((s) => s.triggers.length === 0);
  const parts = [BASE, ...always.map((s) => `<skill name="${s.name}">\n${s.content}\n</skill>`)];
  if (settings.agent.system_message_suffix) parts.push(settings.agent.system_message_suffix);
  const secretNames = Object.keys(settings.secrets);
  const dynamic = [
    `Workspace: ${workspace}`,
    `Date: ${new Date().toISOString().slice(0, 10)}`,
    ...(secretNames.length ? [`Secrets available as environment variables: ${secretNames.join(', ')}`] : []),
  ].join('\n');
  return { static: parts.join('\n\n'), dynamic };
}
