/**
 * The services over organizations and what users set for themselves (settings, secrets, LLM profiles, the
 * settings a start copies), and the git searches that use the users' provider tokens.
 */
import type { SecretBox } from '../auth/secret-box';
import type { Config } from '../config';
import { GitHostA } from '../git/git-host-a';
import { GitSearchService } from '../git/git-search-service';
import { LlmProfilesService } from '../orgs/llm-profiles-service';
import { OrganizationsService } from '../orgs/organizations-service';
import { StartSettingsResolver } from '../orgs/start-settings';
import { UserSettingsService } from '../orgs/user-settings-service';
import type { SealingStores } from './stores';

/** The services every process with the secrets key uses: organizations, and the settings a start copies. */
export interface Services {
  organizations: OrganizationsService;
  startSettings: StartSettingsResolver;
  /** A user's own settings, secrets and provider tokens (the /api/v1/settings and /api/v1/secrets routes). */
  userSettings: UserSettingsService;
  /** A user's saved LLM profiles (/api/v1/settings/profiles). */
  llmProfiles: LlmProfilesService;
}

export function createServices(stores: SealingStores, deps: { box: SecretBox }): Services {
  const { users, organizations, memberships, userSecrets, userSettings, llmProfiles } = stores;
  return {
    organizations: new OrganizationsService({ users, organizations, memberships, box: deps.box }),
    startSettings: new StartSettingsResolver({
      users,
      organizations,
      userSecrets,
      userSettings,
      llmProfiles,
      box: deps.box,
    }),
    userSettings: new UserSettingsService({
      users,
      organizations,
      memberships,
      userSecrets,
      userSettings,
      box: deps.box,
    }),
    llmProfiles: new LlmProfilesService({ users, organizations, userSettings, llmProfiles, box: deps.box }),
  };
}

/** The git searches, over the hosts this service reaches (git host A at GIT_HOST_A_API_URL). */
export function createGitSearchService(
  stores: Pick<SealingStores, 'userSecrets'>,
  config: Pick<Config, 'starts' | 'gitHosts'>,
): GitSearchService {
  return new GitSearchService({
    userSecrets: stores.userSecrets,
    hosts: [new GitHostA(config.starts.gitHostAApiUrl)],
    timeoutMs: config.gitHosts.timeoutMs,
  });
}
