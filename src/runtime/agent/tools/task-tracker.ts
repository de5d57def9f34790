/** task_tracker: the agent keeps a task list; `plan` replaces it, `view` shows it. */
import { z } from 'zod';
import { defineTool, type TaskItem } from './tool';

const TaskSchema = z.strictObject({
  title: z.string().min(1),
  notes: z.string().default(''),
  status: z.enum(['todo', 'in_progress', 'done']).default('todo'),
});

export function renderTasks(tasks: TaskItem[]): string {
  if (tasks.length === 0) return 'No tasks yet. Use the plan command to add some.';
  const mark = { todo: '[ ]', in_progress: '[~]', done: '[x]' } as const;
  return tasks.map((t, i) => `${i + 1}. ${mark[t.status]} ${t.title}${t.notes ? ` (${t.notes})` : ''}`).join('\n');
}

export const taskTrackerTool = defineTool({
  name: 'task_tracker',
  description: 'Keep a structured task list for the work: `plan` replaces the whole list, `view` shows it.',
  params: z.strictObject({
    command: z.enum(['view', 'plan']),
    task_list: z.array(TaskSchema).optional().describe('The full list (required for plan).'),
  }),
  actionKind: 'TaskTrackerAction',
  observationKind: 'TaskTrackerObservation',
  async run(args, ctx) {
    if (args.command === 'plan') {
      if (!args.task_list) return { text: 'The plan command needs task_list.', isError: true };
      ctx.tasks.splice(0, ctx.tasks.length, ...args.task_list);
    }
    return { text: renderTasks(ctx.tasks), isError: false, fields: { command: args.command, task_list: ctx.tasks } };
  },
});
