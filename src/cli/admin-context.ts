/** What every `agent-control-admin` command is given: the configuration, and how to answer (`--json` or text). */
import type { Command } from 'commander';
import type { Config } from '../config';

export interface AdminContext {
  /** The configuration, read when a command runs (so `--help` needs none). */
  config: () => Config;
  /** Whether `--json` was given. */
  json: () => boolean;
  /** Prints `value` as JSON under `--json`, else `text`. */
  print: (value: unknown, text: string) => void;
}

export function adminContext(program: Command, config: () => Config): AdminContext {
  const json = () => Boolean(program.opts<{ json?: boolean }>().json);
  return { config, json, print: (value, text) => console.log(json() ? JSON.stringify(value) : text) };
}
