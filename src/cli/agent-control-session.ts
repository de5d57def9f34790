/**
 * What the `agent-control` commands start from: the client of the service configured by `login` or the
 * environment (user-config.ts), and Ctrl-C as an abort signal.
 */
import { AgentControlClient } from '../client';
import { UsageError } from './agent-control-errors';
import { EXIT } from './exit-codes';
import { readUserConfig } from './user-config';

export function client(): AgentControlClient {
  const c = readUserConfig();
  if (!c.url || !c.apiKey)
    throw new UsageError(
      'no service configured: run `AGENT_CONTROL_API_KEY=... agent-control login --url URL`, or set AGENT_CONTROL_URL and AGENT_CONTROL_API_KEY',
    );
  return new AgentControlClient({ baseUrl: c.url, apiKey: c.apiKey });
}

/** Aborted by the first Ctrl-C; a second one exits at once. */
export function interruptSignal(): AbortController {
  const ac = new AbortController();
  process.once('SIGINT', () => {
    ac.abort();
    process.once('SIGINT', () => process.exit(EXIT.DETACHED));
  });
  return ac;
}
