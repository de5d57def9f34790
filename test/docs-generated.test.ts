/** The tables of docs/ made from their source of truth are as it says (`npm run gen:docs` makes them again). */
import fs from 'node:fs';
import path from 'node:path';
import { GENERATED_TABLES, withTable } from '../scripts/generate-docs';

describe('generated tables of docs/', () => {
  it.each(GENERATED_TABLES)('$page: $name is what its source says', ({ page, name, render }) => {
    const text = fs.readFileSync(path.join(__dirname, '..', page), 'utf8');
    expect(withTable(text, name, render())).toBe(text);
  });

  it('refuses a page without the markers', () => {
    expect(() => withTable('no markers here', 'exit-codes', '| x |')).toThrow(/markers of exit-codes/);
  });
});
