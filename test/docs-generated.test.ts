/** The tables of docs/ made from their source of truth are as it says (`npm run gen:docs` makes them again). */
import fs from 'node:fs';
import path from 'node:path';
import { GENERATED_TABLES, withTable } from '../scripts/generate-docs';
import { ENV_VARIABLES } from '../src/config';
import { CONFIG_REFERENCE } from '../src/config/reference';

describe('generated tables of docs/', () => {
  it.each(GENERATED_TABLES)('$page: $name is what its source says', ({ page, name, render }) => {
    const text = fs.readFileSync(path.join(__dirname, '..', page), 'utf8');
    expect(withTable(text, name, render())).toBe(text);
  });

  it('the configuration reference names every variable of the schema once, and no other', () => {
    const documented = CONFIG_REFERENCE.flatMap((e) => e.variables);
    expect([...documented].sort()).toEqual([...ENV_VARIABLES].sort());
    expect(new Set(documented).size).toBe(documented.length);
  });

  it('refuses a page without the markers', () => {
    expect(() => withTable('no markers here', 'exit-codes', '| x |')).toThrow(/markers of exit-codes/);
  });
});
