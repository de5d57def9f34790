/** `agent-control login`: an API key checked against the service, then kept with its URL in the user's config file. */
import type { Command } from 'commander';
import { AgentControlClient, ProtocolError, unwrap } from '../client';
import { UsageError } from './agent-control-errors';
import { note, out } from './agent-control-output';
import { writeUserConfig } from './user-config';

const isLoopback = (host: string) => host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);

export function addLoginCommand(program: Command) {
  program
    .command('login')
    .description('check an API key against the service and keep it, with the URL, in the config file (mode 0600)')
    .requiredOption('--url <url>', 'the service, e.g. http://127.0.0.1:8000')
    .option(
      '--api-key <key>',
      'the API key (default and better: AGENT_CONTROL_API_KEY; a command line is visible to other processes)',
    )
    .action(login);
}

async function login(o: { url: string; apiKey?: string }) {
  const apiKey = o.apiKey ?? process.env.AGENT_CONTROL_API_KEY;
  if (!apiKey) throw new UsageError('set AGENT_CONTROL_API_KEY (or give --api-key)');
  const url = serviceUrl(o.url);
  if (url.protocol === 'http:' && !isLoopback(url.hostname))
    note(`warning: ${url.host} is reached over plain http: the API key crosses the network unencrypted`);
  const c = new AgentControlClient({ baseUrl: o.url, apiKey });
  const me = await currentUser(c);
  const file = writeUserConfig({ url: c.baseUrl, apiKey });
  out(`logged in to ${c.baseUrl} as ${typeof me.email === 'string' ? me.email : me.id}; saved in ${file}`);
}

/** `--url` as an http or https URL. */
function serviceUrl(given: string): URL {
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new UsageError(`--url wants a URL such as http://127.0.0.1:8000, not ${given}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--url wants http or https, not ${url.protocol}`);
  return url;
}

/** The user the API key belongs to; what answers with no user is not the service. */
async function currentUser(c: AgentControlClient): Promise<{ id: string; email?: unknown }> {
  const me = (await unwrap(c.api.GET('/api/v1/users/me'))) as { id?: unknown; email?: unknown } | null;
  if (typeof me?.id !== 'string')
    throw new ProtocolError(c.baseUrl, 'GET /api/v1/users/me answered no user: is this the service?');
  return { id: me.id, email: me.email };
}
