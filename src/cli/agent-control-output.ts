/**
 * How `agent-control` prints: lines for a person, JSON for scripts (`--json`), notes on stderr; what came
 * from the service in them is shown escaped where a terminal would act on it (event-lines.ts).
 */
import { Option } from 'commander';
import { safeJson, terminalSafe } from './event-lines';

/** One line for a person: what came from the service in it is shown escaped where a terminal would act on it. */
export const out = (line: string) => process.stdout.write(`${terminalSafe(line)}\n`);
export const json = (value: unknown, indent?: number) => process.stdout.write(`${safeJson(value, indent)}\n`);
/** A message for stderr, as safe as `out`. */
export const note = (text: string) => process.stderr.write(`${terminalSafe(text)}\n`);

export const jsonOption = () => new Option('--json', 'one JSON object per line, for scripts');
