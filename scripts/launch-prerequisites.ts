/**
 * What the launcher obtains before it starts a child: the firewall's commands for isolated process
 * sandboxes, the embedded servers' binaries, and the OpenHands agent server when a spec runs it.
 */
import type { Config } from '../src/config';
import type { Logger } from '../src/logger';
import { loadSandboxSpecs } from '../src/sandboxes/spec-file';
import { BUILT_IN_SANDBOX_SPECS } from '../src/store/sandbox-specs-store';
import { ensureCommands } from './host-packages';
import { ensureAgentServer } from './servers/agent-server';
import { obtainServers, type ServerBinaries } from './servers/obtain';

export interface Prerequisites {
  /** The dev server's and FerretDB's binaries: set when either one is embedded. */
  binaries?: ServerBinaries;
  /** The OpenHands agent server's environment, when a spec runs it. */
  agentServerDir?: string;
}

export async function obtainPrerequisites(config: Config, log: Logger): Promise<Prerequisites> {
  if (config.sandboxes.processIsolation === 'user') {
    // Isolated process sandboxes sit behind a firewall chain of their uids.
    await ensureCommands(
      { 'iptables-restore': 'iptables', 'ip6tables-restore': 'iptables' },
      'isolating process sandboxes (SANDBOX_PROCESS_ISOLATION=user)',
      (l) => log.info(l),
    );
  }
  const embedded = !config.mongo.uri || !config.temporal.address;
  const binaries = embedded ? await obtainServers(config.serversCacheDir, (l) => log.info(l)) : undefined;
  const agentServerDir = await agentServerFor(config, (l) => log.info(l));
  return { binaries, agentServerDir };
}

/**
 * The OpenHands agent server's environment when a spec runs it: the default spec, or one of
 * SANDBOX_SPECS_FILE's. Installed (once, cached) unless OPENHANDS_AGENT_SERVER_DIR names one already.
 */
async function agentServerFor(config: Config, say: (line: string) => void): Promise<string | undefined> {
  if (config.sandboxes.agentServerDir) return config.sandboxes.agentServerDir;
  const specs = loadSandboxSpecs(config.sandboxes.specsFile);
  const needed = specs.some(
    (s) =>
      s.runtime === 'openhands' &&
      (s.id === config.sandboxes.defaultSpecId || !BUILT_IN_SANDBOX_SPECS.some((b) => b.id === s.id)),
  );
  return needed ? (await ensureAgentServer(config.serversCacheDir, say)).dir : undefined;
}
