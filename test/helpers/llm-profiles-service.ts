/**
 * The service of the LLM profiles' suites (test/llm-profiles.test.ts, test/llm-profiles-starts.test.ts):
 * the api, worker and sandboxes (process provider, no idle pause), three scripted LLM endpoints (the
 * organization's, a profile's and the one switched to), two users and the organization's LLM with its
 * key; the keys no answer may hold, and every answer of the file kept for its final grep.
 */
import { ScriptedLlm } from '../../src/llm/scripted-llm';
import type { TestApi } from './api';
import { componentValidator, publishedDocument } from './published-schemas';
import { recordAnswers } from './recorded-answers';
import { startServiceUnderTest, type ServiceUnderTest } from './service';

export const ORG_KEY = 'sk-org-key-0123456789';
export const PROFILE_KEY = 'sk-profile-key-9876543210';
export const SWITCH_KEY = 'sk-switch-key-5555555555';
export const USER_KEY = 'sk-user-own-key-4444444444';
/** What no answer of the LLM profiles' suites may hold. */
export const LLM_PROFILE_KEYS = [ORG_KEY, PROFILE_KEY, SWITCH_KEY, USER_KEY];

/** Errors of `value` against a published component schema (none: it decodes as published). */
export const publishedErrors = componentValidator(publishedDocument());

/** What the suite's beforeAll started. */
export interface LlmProfilesService {
  t: TestApi;
  orgLlm: ScriptedLlm;
  profileLlm: ScriptedLlm;
  switchLlm: ScriptedLlm;
  user: { userId: string; key: string };
  other: { userId: string; key: string };
}

/**
 * Starts the service and the LLM endpoints in a beforeAll of the describe it is called in (`user`'s
 * organization on orgLlm with ORG_KEY), and closes them in its afterAll; `started()` is what it started,
 * to read in a beforeAll of the suite's own. `api(key)` is a published client and `req` is t.request,
 * each keeping every answer in `recorded`.
 */
export function useLlmProfilesService() {
  let service: ServiceUnderTest;
  let t: TestApi;
  let orgLlm: ScriptedLlm;
  let profileLlm: ScriptedLlm;
  let switchLlm: ScriptedLlm;
  let user: { userId: string; key: string };
  let other: { userId: string; key: string };
  /** Every answer of the api in the file, to look for the keys in. */
  const recorded = recordAnswers();

  const api = (key: string) => recorded.client(t.url, key);

  beforeAll(async () => {
    service = await startServiceUnderTest('profiles-', { SANDBOX_IDLE_TIMEOUT_MS: '0' });
    t = service.t;
    [orgLlm, profileLlm, switchLlm] = await Promise.all([
      new ScriptedLlm([]).start(),
      new ScriptedLlm([]).start(),
      new ScriptedLlm([]).start(),
    ]);
    user = await t.newUser();
    other = await t.newUser();
    await t.setOrgLlm(user.key, { model: 'org-model', base_url: orgLlm.url, api_key: ORG_KEY });
  });

  afterAll(async () => {
    await service?.close();
    await Promise.all([orgLlm?.close(), profileLlm?.close(), switchLlm?.close()]);
  });

  /** t.request, its answer kept for the grep of the last test. */
  const req = async (...args: Parameters<TestApi['request']>) => {
    const r = await t.request(...args);
    recorded.keep(JSON.stringify(r.body));
    return r;
  };

  return {
    started: (): LlmProfilesService => ({ t, orgLlm, profileLlm, switchLlm, user, other }),
    recorded,
    api,
    req,
  };
}
