/**
 * Where `agent-control` finds the service and its API key: AGENT_CONTROL_URL and AGENT_CONTROL_API_KEY
 * override the file `agent-control login` writes ($XDG_CONFIG_HOME/agent-control/config.json, else
 * ~/.config/agent-control/config.json, mode 0600).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface UserConfig {
  url: string;
  apiKey: string;
}

export function userConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'agent-control', 'config.json');
}

export function readUserConfig(env: NodeJS.ProcessEnv = process.env): Partial<UserConfig> {
  let file: Partial<UserConfig> = {};
  try {
    const parsed = JSON.parse(fs.readFileSync(userConfigPath(env), 'utf8')) as { url?: unknown; api_key?: unknown };
    file = {
      url: typeof parsed.url === 'string' ? parsed.url : undefined,
      apiKey: typeof parsed.api_key === 'string' ? parsed.api_key : undefined,
    };
  } catch {
    // no file, or not ours: the environment may still say everything
  }
  return { url: env.AGENT_CONTROL_URL || file.url, apiKey: env.AGENT_CONTROL_API_KEY || file.apiKey };
}

export function writeUserConfig(c: UserConfig, env: NodeJS.ProcessEnv = process.env): string {
  const file = userConfigPath(env);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  // A new file of our own (never one left behind, nor a link planted in its place), 0600 from its first byte.
  fs.rmSync(tmp, { force: true });
  fs.writeFileSync(tmp, `${JSON.stringify({ url: c.url, api_key: c.apiKey }, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  fs.renameSync(tmp, file);
  return file;
}
