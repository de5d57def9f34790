/**
 * An installed OpenHands agent server environment (scripts/servers/agent-server.ts makes it): the
 * description it holds, `agent-server.json`, with paths relative to the environment so it can be moved
 * (process isolation shares a copy that sandbox uids may read).
 */
import fs from 'node:fs';
import path from 'node:path';

export const AGENT_SERVER_DESCRIPTION = 'agent-server.json';

export interface AgentServerEnv {
  /** The environment's directory. */
  dir: string;
  /** Its Python interpreter (absolute). */
  python: string;
  /** A directory to put in LD_LIBRARY_PATH (a copied interpreter's libpython), or null. */
  libDir: string | null;
  /** openhands-agent-server's version. */
  version: string;
  /** The interpreter's version, e.g. 3.12.1. */
  pythonVersion: string;
}

/** What is written in the description file. */
export interface AgentServerDescription {
  python: string;
  libDir: string | null;
  version: string;
  pythonVersion: string;
}

/** Reads an environment's description, with its paths made absolute; null when `dir` holds none. */
export function readAgentServerEnv(dir: string): AgentServerEnv | null {
  let d: AgentServerDescription;
  try {
    d = JSON.parse(fs.readFileSync(path.join(dir, AGENT_SERVER_DESCRIPTION), 'utf8')) as AgentServerDescription;
  } catch {
    return null;
  }
  return {
    dir,
    python: path.join(dir, d.python),
    libDir: d.libDir === null ? null : path.join(dir, d.libDir),
    version: d.version,
    pythonVersion: d.pythonVersion,
  };
}
