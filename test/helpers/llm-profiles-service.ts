/**
 * The service of the LLM profiles' suites (test/llm-profiles.test.ts, test/llm-profiles-starts.test.ts):
 * the api, worker and sandboxes (process provider, no idle pause), three scripted LLM endpoints (the
 * organization's, a profile's and the one switched to), two users and the organization's LLM with its
 * key; the keys no answer may hold, and every answer of the file kept for its final grep.
 *
 * A suite calls `useLlmProfilesService()` inside its describe and imports the bindings below (`t`, the
 * endpoints, `user`, `other`, `recorded`, `api`, `req`): the beforeAll it registers assigns them, its
 * afterAll closes what it started. Sharing them this way is safe: jest gives each test file its own module
 * registry, so each file has its own instance of this module and of its bindings (`recorded` holds that
 * file's answers only); and the SWC transform jest uses compiles an import to a property read of the
 * module object at each use, so the file sees the values the beforeAll assigned (live bindings).
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

let service: ServiceUnderTest | undefined;
/** The api of the service `useLlmProfilesService` started. */
export let t: TestApi;
/** The organization's LLM endpoint (user's organization, with ORG_KEY). */
export let orgLlm: ScriptedLlm;
/** The endpoint the suites' profiles name. */
export let profileLlm: ScriptedLlm;
/** The endpoint switch_profile moves to. */
export let switchLlm: ScriptedLlm;
/** The user whose organization's LLM is orgLlm. */
export let user: { userId: string; key: string };
/** Another user, who must see none of `user`'s profiles. */
export let other: { userId: string; key: string };
/** Every answer of the api in the file, to look for the keys in. */
export const recorded = recordAnswers();

/** A published client for `key`, every answer kept in `recorded`. */
export const api = (key: string) => recorded.client(t.url, key);

/** t.request, its answer kept for the grep of the last test. */
export const req = async (...args: Parameters<TestApi['request']>) => {
  const r = await t.request(...args);
  recorded.keep(JSON.stringify(r.body));
  return r;
};

/**
 * Starts the service and the LLM endpoints in a beforeAll of the describe it is called in (`user`'s
 * organization on orgLlm with ORG_KEY), assigning the bindings above, and closes them in its afterAll.
 */
export function useLlmProfilesService(): void {
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
}
