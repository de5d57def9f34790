/**
 * Bundles the sandbox runtime (dist/src/runtime/main.js and what it imports) into one file,
 * dist/runtime-bundle.js, at build time. An isolated process sandbox runs as a user of its own that
 * cannot read the checkout or its node_modules: the process provider gives it a copy of this file
 * (see activities/sandbox-providers/process-shared-runtime.ts), and node needs nothing else.
 */
import { build } from 'esbuild';
import path from 'node:path';
import { repoRoot } from './servers/paths';

export const RUNTIME_ENTRY = path.join(repoRoot(), 'dist', 'src', 'runtime', 'main.js');
export const DEFAULT_RUNTIME_BUNDLE = path.join(repoRoot(), 'dist', 'runtime-bundle.js');

export async function bundleRuntime(outFile: string): Promise<string> {
  await build({
    entryPoints: [RUNTIME_ENTRY],
    outfile: outFile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // ws's optional native speed-ups: ws falls back to JavaScript when they are absent.
    external: ['bufferutil', 'utf-8-validate'],
    logLevel: 'warning',
    legalComments: 'none',
  });
  return outFile;
}

if (require.main === module) {
  bundleRuntime(process.argv[2] ?? DEFAULT_RUNTIME_BUNDLE).then(
    (f) => console.log(`runtime bundle written to ${path.relative(process.cwd(), f)}`),
    (e: Error) => {
      console.error(e);
      process.exit(1);
    },
  );
}
