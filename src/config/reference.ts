/**
 * What each environment variable of src/config/ is for, in the words of docs/configuration.md: the
 * table there is made from this list (`npm run gen:docs`), and test/docs-generated.test.ts fails when a
 * variable of the schema has no entry here, an entry names no variable of the schema, or the page drifts.
 */
import { SANDBOX_REFERENCE } from './reference-sandboxes';
import { SERVICE_REFERENCE } from './reference-service';

export interface ConfigReferenceEntry {
  /** The variables the row is about (one, or a few that go together). */
  variables: readonly string[];
  /** The default, as people read it. */
  default: string;
  meaning: string;
}

export const CONFIG_REFERENCE: readonly ConfigReferenceEntry[] = [...SERVICE_REFERENCE, ...SANDBOX_REFERENCE];

/** The variables people set most: the README's short table. */
export const COMMON_SETTINGS = [
  'API_PORT',
  'PUBLIC_BASE_URL',
  'MONGODB_URI',
  'TEMPORAL_ADDRESS',
  'DATA_DIR',
  'SECRETS_KEY',
  'DEFAULT_SANDBOX_SPEC_ID',
  'EMBEDDED_TEMPORAL',
  'METRICS_ADDRESS',
  'LOG_LEVEL',
] as const;

/**
 * The docs table: every variable, or the rows of `only`. The meanings link to pages of docs/ by
 * relative paths; from elsewhere (the README) `pages` is the way to docs/.
 */
export function configReferenceMarkdown(only?: readonly string[], pages = ''): string {
  const entries = only ? CONFIG_REFERENCE.filter((e) => e.variables.some((v) => only.includes(v))) : CONFIG_REFERENCE;
  const linked = (text: string) => text.replace(/\]\((?!https?:|#)/g, `](${pages}`);
  const rows = entries.map(
    (e) => `| ${e.variables.map((v) => `\`${v}\``).join(', ')} | ${linked(e.default)} | ${linked(e.meaning)} |`,
  );
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}
