#!/usr/bin/env node
/**
 * agent-control-admin: users, API keys and a health check of the whole system, for operators.
 * Raw API keys are printed once, when created, and never stored.
 */
import { Command, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config';
import { adminContext } from './admin-context';
import { CliError } from './admin-errors';
import { addBootstrapCommand, addDemoCommand, addDoctorCommand } from './admin-operations';
import { addOrgCommands } from './admin-orgs';
import { addKeyCommands, addSecretCommands, addUserCommands } from './admin-users';

export function buildCli(config: () => Config): Command {
  const program = new Command('agent-control-admin')
    .description('Administer users and API keys of the agent control service')
    .addOption(new Option('--json', 'print machine-readable JSON'))
    .showHelpAfterError();
  const cli = adminContext(program, config);
  addUserCommands(program, cli);
  addKeyCommands(program, cli);
  addOrgCommands(program, cli);
  addSecretCommands(program, cli);
  addBootstrapCommand(program, cli);
  addDemoCommand(program, cli);
  addDoctorCommand(program, cli);
  return program;
}

if (require.main === module) {
  buildCli(() => loadConfig())
    .parseAsync(process.argv)
    .catch((e: Error) => {
      console.error(e instanceof CliError || e instanceof ConfigError ? e.message : e);
      process.exit(1);
    });
}
