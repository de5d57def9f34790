/** Reads SANDBOX_SPECS_FILE: a JSON array of sandbox specs an operator adds to the built-in one. */
import fs from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../config';
import { SandboxSpecInputSchema, type SandboxSpecInput } from '../schemas/sandboxes';
import { BUILT_IN_SANDBOX_SPECS } from '../store/sandbox-specs-store';

/** The specs to write at start-up: the built-in ones, then the file's (which may redefine them). */
export function loadSandboxSpecs(file: string | undefined): SandboxSpecInput[] {
  if (!file) return [...BUILT_IN_SANDBOX_SPECS];
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigError([`SANDBOX_SPECS_FILE=${file} could not be read as JSON: ${(e as Error).message}`]);
  }
  const parsed = z.array(SandboxSpecInputSchema).safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => `SANDBOX_SPECS_FILE=${file}: at [${i.path.join('][')}]: ${i.message}`),
    );
  }
  const ids = parsed.data.map((s) => s.id);
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice) throw new ConfigError([`SANDBOX_SPECS_FILE=${file} defines spec ${twice} twice`]);
  const fromFile = parsed.data;
  return [...BUILT_IN_SANDBOX_SPECS.filter((b) => !fromFile.some((s) => s.id === b.id)), ...fromFile];
}
