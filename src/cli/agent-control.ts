#!/usr/bin/env node
/**
 * agent-control: start and watch agent conversations from a terminal, for the people who use the service.
 * Every call goes through the typed client (src/client); the exit code says how a command ended.
 */
import { Command, CommanderError } from 'commander';
import { addConversationsCommands, addSendCommand } from './agent-control-conversations';
import { exitCodeOf } from './agent-control-errors';
import { addEventsCommands } from './agent-control-events';
import { addLoginCommand } from './agent-control-login';
import { note } from './agent-control-output';
import { addSandboxesCommands } from './agent-control-sandboxes';
import { addStartCommand } from './agent-control-start';
import { addTasksCommands } from './agent-control-tasks';
import { EXIT, exitCodesHelp } from './exit-codes';
import { userConfigPath } from './user-config';

const EXIT_HELP = `
Exit codes:
${exitCodesHelp()}

Configuration: AGENT_CONTROL_URL and AGENT_CONTROL_API_KEY, else the file written by \`agent-control login\`
(${userConfigPath()}). Prefer the variable to --api-key: a command line is visible to other processes.`;

export function buildProgram(): Command {
  const program = new Command('agent-control')
    .description('Start and watch AI agent conversations on an agent-control service.')
    .addHelpText('after', EXIT_HELP)
    .showHelpAfterError()
    .exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  addLoginCommand(program);
  addStartCommand(program);
  addSendCommand(program);
  addEventsCommands(program);
  addConversationsCommands(program);
  addSandboxesCommands(program);
  addTasksCommands(program);
  return program;
}

export async function main(argv = process.argv): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.OK;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    note(`agent-control: ${err instanceof Error ? err.message : String(err)}`);
    return exitCodeOf(err);
  }
}

if (require.main === module) {
  void main().then((code) => process.exit(code));
}
