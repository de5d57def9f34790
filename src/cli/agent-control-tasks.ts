/** `agent-control tasks`: the user's start tasks, newest first, and one by its id. */
import type { Command } from 'commander';
import { unwrap } from '../client';
import { listCommand, newestFirst, showCommand } from './agent-control-listing';

export function addTasksCommands(program: Command) {
  const tasks = program.command('tasks').description('start tasks');
  listCommand(
    tasks,
    'ls',
    (c, pageId, limit) => unwrap(c.api.GET('/api/v1/app-conversations/start-tasks/search', newestFirst(pageId, limit))),
    (x) => `${x.id}  ${x.status.padEnd(22)} ${x.created_at.slice(0, 19)}  ${x.app_conversation_id ?? ''}`,
  ).description('the newest first');
  showCommand(tasks, '<task-id>', 'start task', (c, id) =>
    unwrap(c.api.GET('/api/v1/app-conversations/start-tasks', { params: { query: { ids: [id] } } })),
  );
}
