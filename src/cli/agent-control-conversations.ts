/** `agent-control send` and `agent-control conversations`: a follow-up message, and the user's conversations. */
import type { Command } from 'commander';
import { unwrap } from '../client';
import { listCommand, newestFirst, showCommand } from './agent-control-listing';
import { json, jsonOption, out } from './agent-control-output';
import { client } from './agent-control-session';

export function addSendCommand(program: Command) {
  program
    .command('send')
    .description('send a follow-up message to a conversation (the agent runs on it)')
    .argument('<conversation-id>')
    .argument('<message>')
    .option('--no-run', 'store the message without running the agent')
    .addOption(jsonOption())
    .action(async (id: string, message: string, o: { run: boolean; json?: boolean }) => {
      const c = client();
      const answer = await unwrap(
        c.api.POST('/api/v1/app-conversations/{conversation_id}/send-message', {
          params: { path: { conversation_id: id } },
          body: { role: 'user', content: [{ type: 'text', text: message, cache_prompt: false }], run: o.run },
        }),
      );
      if (o.json) json(answer);
      else out(`sent to ${id}`);
    });
}

export function addConversationsCommands(program: Command) {
  const conversations = program.command('conversations').description('your conversations');
  listCommand(
    conversations,
    'ls',
    (c, pageId, limit) => unwrap(c.api.GET('/api/v1/app-conversations/search', newestFirst(pageId, limit))),
    (x) =>
      `${x.id}  ${String((x as { sandbox_status?: string }).sandbox_status ?? '').padEnd(8)} ${x.created_at.slice(0, 19)}  ${x.title ?? ''}`,
  ).description('the newest first');
  showCommand(conversations, '<conversation-id>', 'conversation', (c, id) =>
    unwrap(c.api.GET('/api/v1/app-conversations', { params: { query: { ids: [id] } } })),
  );
}
