/**
 * The api of the settings surface's suites (test/settings-api.test.ts, test/settings-api-settings.test.ts,
 * test/settings-api-config.test.ts): started with an operator's models file, the secret values those
 * suites store and that no answer may hold, and the published document with SPEC.md's renamed values put
 * in as the validator every answer is checked against (and kept by, for each file's final grep).
 *
 * A suite calls useSettingsSurface() in its describe and imports t, recorded, decodes and answers as they
 * are: jest gives each test file its own module registry (its own api and record), and its SWC transform
 * compiles imports to module-object reads, so tests see the `t` the beforeAll assigned.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApi, type TestApi } from './api';
import { testConfig } from './env';
import { componentValidator, publishedDocument, withSpecProviderNames } from './published-schemas';
import { recordAnswers } from './recorded-answers';

export const MASK = '**********';
export const secretValue = 'sv-never-shown-0123456789';
export const tokenValue = 'gt-never-shown-0123456789';
export const llmKey = 'sk-never-shown-0123456789';
/** What no answer of the settings suites may hold. */
export const SETTINGS_SECRETS = [secretValue, tokenValue, llmKey];

/** The published document with SPEC.md's renamed values, as a validator of its component schemas. */
function publishedValidator() {
  const doc = withSpecProviderNames(publishedDocument());
  const schemas = doc.components.schemas;
  const renames: Record<string, string> = {
    github_app_slug: 'git_host_a_app_slug',
    posthog_client_key: 'analytics_client_key',
  };
  schemas.WebClientConfig.required = schemas.WebClientConfig.required.map((k: string) => renames[k] ?? k);
  for (const [from, to] of Object.entries(renames)) {
    schemas.WebClientConfig.properties[to] = schemas.WebClientConfig.properties[from];
    delete schemas.WebClientConfig.properties[from];
  }
  // The published agent_settings variants are the reference service's own (agent_kind openhands, ...);
  // ours are SPEC 2.6's, checked by their own JSON Schema (test/settings-api-settings.test.ts).
  schemas.OrgResponse.properties.agent_settings = { type: 'object' };
  return componentValidator(doc);
}

/** Checks and keeps the answers of the file (each test file has its own: see the header). */
export const recorded = recordAnswers(publishedValidator());
export const { answers, decodes } = recorded;

/** The api, once useSettingsSurface's beforeAll has run. */
export let t: TestApi;

/**
 * Starts the api (LLM_MODELS_FILE: openai/gpt-a, openai/gpt-b, anthropic/claude-c and an unverified
 * local/llama-d) in a beforeAll of the describe it is called in, and closes it in its afterAll.
 */
export function useSettingsSurface(): void {
  let dir: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'settings-api-'));
    const models = path.join(dir, 'models.json');
    fs.writeFileSync(
      models,
      JSON.stringify([
        'openai/gpt-a',
        'openai/gpt-b',
        'anthropic/claude-c',
        { provider: 'local', name: 'llama-d', verified: false },
      ]),
    );
    t = await startTestApi(testConfig({ DATA_DIR: dir, LLM_MODELS_FILE: models }));
  });

  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
}
