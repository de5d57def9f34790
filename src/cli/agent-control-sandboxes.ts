/** `agent-control sandboxes`: list the user's sandboxes, pause, resume or delete one. */
import type { Command } from 'commander';
import { unwrap } from '../client';
import { listCommand } from './agent-control-listing';
import { out } from './agent-control-output';
import { client } from './agent-control-session';

export function addSandboxesCommands(program: Command) {
  const sandboxes = program.command('sandboxes').description('your sandboxes');
  listCommand(
    sandboxes,
    'ls',
    (c, pageId, limit) =>
      unwrap(c.api.GET('/api/v1/sandboxes/search', { params: { query: { page_id: pageId, limit } } })),
    (x) => `${x.id}  ${x.status.padEnd(8)} ${x.created_at.slice(0, 19)}`,
  );
  for (const [name, verb] of [
    ['pause', 'pause'],
    ['resume', 'resume'],
  ] as const) {
    sandboxes
      .command(name)
      .argument('<sandbox-id>')
      .action(async (id: string) => {
        const c = client();
        await unwrap(c.api.POST(`/api/v1/sandboxes/{id}/${verb}`, { params: { path: { id } } }));
        out(`${verb}d ${id}`);
      });
  }
  sandboxes
    .command('rm')
    .argument('<sandbox-id>')
    .action(async (id: string) => {
      const c = client();
      await unwrap(c.api.DELETE('/api/v1/sandboxes/{id}', { params: { path: { id } } }));
      out(`deleted ${id}`);
    });
}
