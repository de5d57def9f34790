/**
 * Bundles workflows/ once, at build time, into dist/workflow-bundle.js; the worker loads that file
 * instead of running webpack at every start.
 */
import { DefaultLogger, bundleWorkflowCode } from '@temporalio/worker';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './servers/paths';

export const WORKFLOWS_ENTRY = path.join(repoRoot(), 'workflows', 'index.ts');
/** Workflow interceptors (OpenTelemetry), bundled with the workflows. */
export const WORKFLOW_INTERCEPTORS = path.join(repoRoot(), 'workflows', 'interceptors.ts');
export const DEFAULT_BUNDLE_PATH = path.join(repoRoot(), 'dist', 'workflow-bundle.js');

export async function bundleWorkflows(outFile: string): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_ENTRY,
    workflowInterceptorModules: [WORKFLOW_INTERCEPTORS],
    logger: new DefaultLogger('WARN'),
  });
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile, code);
  return outFile;
}

if (require.main === module) {
  const out = process.argv[2] ?? DEFAULT_BUNDLE_PATH;
  bundleWorkflows(out).then(
    (f) => console.log(`workflow bundle written to ${path.relative(process.cwd(), f)}`),
    (e: Error) => {
      console.error(e);
      process.exit(1);
    },
  );
}
