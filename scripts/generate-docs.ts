/**
 * The tables of docs/ that are made from their source of truth, each between a pair of markers
 * (`<!-- generated: NAME -->` ... `<!-- end: NAME -->`): the CLI's exit codes (src/cli/exit-codes.ts) and
 * the environment variables (src/config/reference.ts, checked against the schema of src/config/).
 * `npm run gen:docs` rewrites them; `test/docs-generated.test.ts` fails when a page differs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { exitCodesMarkdown } from '../src/cli/exit-codes';
import { COMMON_SETTINGS, configReferenceMarkdown } from '../src/config/reference';

const ROOT = path.resolve(__dirname, '..', '..');

/** Each generated table: its page, its name between the markers, and its text. */
export const GENERATED_TABLES: { page: string; name: string; render: () => string }[] = [
  { page: 'docs/cli-and-client.md', name: 'exit-codes', render: exitCodesMarkdown },
  { page: 'docs/configuration.md', name: 'configuration', render: () => configReferenceMarkdown() },
  { page: 'README.md', name: 'common-settings', render: () => configReferenceMarkdown(COMMON_SETTINGS, 'docs/') },
];

/** The page's text with the table between its markers made again (an error when a marker is missing). */
export function withTable(text: string, name: string, table: string): string {
  const start = `<!-- generated: ${name} -->`;
  const end = `<!-- end: ${name} -->`;
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  if (i < 0 || j < i) throw new Error(`the markers of ${name} are missing or out of order`);
  return `${text.slice(0, i + start.length)}\n${table}\n${text.slice(j)}`;
}

if (require.main === module) {
  for (const { page, name, render } of GENERATED_TABLES) {
    const file = path.join(ROOT, page);
    fs.writeFileSync(file, withTable(fs.readFileSync(file, 'utf8'), name, render()));
  }
}
