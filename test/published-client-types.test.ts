/** The generated types of the published document are derived, never edited: regenerating gives the same file. */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import os from 'node:os';

it('test/fixtures/published/openhands-cloud.d.ts is what openapi-typescript makes of the pinned document', () => {
  const dir = path.join(__dirname, 'fixtures', 'published');
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'published-')), 'types.d.ts');
  execFileSync(
    process.execPath,
    [
      path.join(__dirname, '..', 'node_modules', 'openapi-typescript', 'bin', 'cli.js'),
      path.join(dir, 'openhands-cloud.json'),
      '-o',
      out,
    ],
    { stdio: 'pipe' },
  );
  expect(fs.readFileSync(out, 'utf8')).toBe(fs.readFileSync(path.join(dir, 'openhands-cloud.d.ts'), 'utf8'));
});
