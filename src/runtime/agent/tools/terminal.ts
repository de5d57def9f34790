/** terminal: runs a bash command in the workspace, with a timeout; secret values are masked in its output. */
import { z } from 'zod';
import { executeBash } from '../../bash';
import { defineTool } from './tool';

export const terminalTool = defineTool({
  name: 'terminal',
  description:
    'Run a bash command in the workspace and get its exit code and output (stdout and stderr interleaved). ' +
    'Each call starts a fresh shell in the workspace directory. Long-running servers should be started in the background.',
  params: z.strictObject({
    command: z.string().min(1).describe('The bash command to run.'),
    timeout: z
      .number()
      .positive()
      .max(3600)
      .default(120)
      .describe('Seconds before the command is killed (default 120).'),
  }),
  actionKind: 'TerminalAction',
  observationKind: 'TerminalObservation',
  async run(args, ctx) {
    const r = await executeBash({
      command: args.command,
      cwd: ctx.workspace,
      timeoutMs: args.timeout * 1000,
      maxOutputBytes: ctx.maxOutputBytes,
      env: ctx.env,
      signal: ctx.signal,
    });
    const text = `${r.output}${r.output.endsWith('\n') || r.output === '' ? '' : '\n'}[exit code ${r.exit_code}]`;
    return {
      text,
      isError: r.exit_code !== 0,
      fields: { command: args.command, exit_code: r.exit_code, timeout: r.timed_out },
    };
  },
});
