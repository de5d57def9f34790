/**
 * The layering fence (scripts/lint/layers.js), run by `npm test`'s lint step on the whole tree: here it
 * is shown to refuse imports that run up the layers and to let the ones that go down pass.
 */
import path from 'node:path';
import { Linter, type ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const layers = require('../scripts/lint/layers') as { LAYERS: Record<string, string[]>; plugin: ESLint.Plugin };

const root = path.resolve(__dirname, '..');
const linter = new Linter({ configType: 'flat', cwd: root });
const config: Linter.Config[] = [
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser as Linter.Parser },
    plugins: { layers: layers.plugin },
    rules: { 'layers/imports-go-down': 'error' },
  },
];

function problems(file: string, code: string): string[] {
  return linter.verify(code, config, { filename: path.join(root, file) }).map((m) => m.message);
}

describe('layering lint rule', () => {
  it.each([
    [
      'src/store/x.ts',
      "import { SandboxService } from '../sandboxes/sandbox-service';",
      'src/store may not import src/sandboxes',
    ],
    [
      'src/schemas/x.ts',
      "import { encodeCursor } from '../http/routers/events.router';",
      'src/schemas may not import src/http',
    ],
    ['src/sandboxes/x.ts', "import { HttpError } from '../web/errors';", 'src/sandboxes may not import src/web'],
    [
      'src/runtime/agent/x.ts',
      "import type { EventsStore } from '../../store/events-store';",
      'src/runtime may not import src/store',
    ],
    ['src/web/x.ts', "export { Readiness } from '../http/readiness';", 'src/web may not import src/http'],
    ['activities/x.ts', "import { createApp } from '../src/http/app';", 'activities may not import src/http'],
    ['src/events/x.ts', "const m = import('../../worker/worker');", 'src/events may not import worker'],
    ['src/store/x.ts', 'const m = import(`../http/app`);', 'src/store may not import src/http'],
    ['src/store/x.ts', "type T = import('../http/app').App;", 'src/store may not import src/http'],
    ['src/orgs/x.ts', "import app = require('../api/server');", 'src/orgs may not import src/api'],
    ['src/orgs/x.ts', "const app = require('../api/server');", 'src/orgs may not import src/api'],
  ])('refuses %s importing upward', (file, code, message) => {
    const found = problems(file, code);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(message);
  });

  it.each([
    [
      'src/http/routers/x.ts',
      "import { SandboxService } from '../../sandboxes/sandbox-service';\nimport { HttpError } from '../../web/errors';",
    ],
    [
      'src/sandboxes/x.ts',
      "import { NotFound } from '../errors';\nimport type { SandboxesStore } from '../store/sandboxes-store';",
    ],
    [
      'src/runtime/server2.ts',
      "import { ApiRouter } from '../web/route';\nimport { EventSchema } from '../schemas/events';",
    ],
    ['test/x.test.ts', "import { createApp } from '../src/http/app';"],
    ['src/store/x.ts', "import { z } from 'zod';\nimport { isDuplicateKey } from './errors';"],
  ])('lets %s import downward, its own unit and packages', (file, code) => {
    expect(problems(file, code)).toEqual([]);
  });

  it('names a layer for every folder of src/ and every top-level code folder', () => {
    const fs = jest.requireActual<typeof import('node:fs')>('node:fs');
    const units = fs
      .readdirSync(path.join(root, 'src'), { withFileTypes: true })
      .map((d) => `src/${d.isDirectory() ? d.name : d.name.replace(/\.ts$/, '')}`);
    for (const unit of [...units, 'activities', 'workflows', 'worker'])
      expect(Object.keys(layers.LAYERS)).toContain(unit);
  });
});
