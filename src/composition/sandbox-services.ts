/**
 * The sandboxes' service and the organization quotas it counts against, built from the configuration:
 * the api's routes and the worker's start tasks create and resume sandboxes through them.
 */
import type { Client } from '@temporalio/client';
import type { SecretBox } from '../auth/secret-box';
import type { Config } from '../config';
import { OrganizationQuotas } from '../orgs/organization-quotas';
import { SandboxService } from '../sandboxes/sandbox-service';
import type { SandboxWorkflowSettings } from '../temporal/shared';
import type { Stores } from './stores';

export interface SandboxServiceOptions {
  box: SecretBox;
  temporal: Client;
  taskQueue: string;
  sandboxes: Config['sandboxes'];
  /** How long pause, resume and delete wait for the workflow (the api passes its config's; else 60 s). */
  operationTimeoutMs?: number;
  /** How long they wait for a worker to accept them before a 503 (the api passes its config's; else 10 s). */
  answerTimeoutMs?: number;
  /** The user and organization quotas (the api and the worker pass their config's; else no limit). */
  quotas?: Pick<Config, 'quotas' | 'organizationQuotas'>;
}

/** The sandbox workflow's settings, from the config (the api and the worker start sandbox workflows). */
export const sandboxWorkflowSettings = (c: Config['sandboxes']): SandboxWorkflowSettings => ({
  healthIntervalMs: c.healthIntervalMs,
  healthGraceMs: c.healthGraceMs,
  hostLostMs: c.hostLostMs,
  idleTimeoutMs: c.idleTimeoutMs,
  historyLimit: c.historyLimit,
});

/** What each organization may hold: the operator's overrides over the configuration's defaults. */
export function createOrganizationQuotas(
  stores: Pick<Stores, 'users' | 'memberships' | 'organizationQuotas'>,
  config: Pick<Config, 'organizationQuotas'>,
): OrganizationQuotas {
  return new OrganizationQuotas({
    users: stores.users,
    memberships: stores.memberships,
    quotas: stores.organizationQuotas,
    defaults: config.organizationQuotas,
  });
}

/** The sandboxes' service: the api's routes and the worker's start tasks create and resume through it. */
export function createSandboxService(stores: Stores, options: SandboxServiceOptions): SandboxService {
  return new SandboxService({
    sandboxes: stores.sandboxes,
    specs: stores.sandboxSpecs,
    conversations: stores.conversations,
    workerHosts: stores.workerHosts,
    box: options.box,
    temporal: options.temporal,
    taskQueue: options.taskQueue,
    defaultSpecId: options.sandboxes.defaultSpecId,
    settings: sandboxWorkflowSettings(options.sandboxes),
    operationTimeoutMs: options.operationTimeoutMs,
    answerTimeoutMs: options.answerTimeoutMs,
    users: stores.users,
    processSandboxes: {
      restricted: options.sandboxes.processIsolation === 'restricted',
      users: options.sandboxes.processUsers,
    },
    maxRunning: options.quotas?.quotas.runningSandboxes ?? null,
    organizationQuotas: options.quotas && createOrganizationQuotas(stores, options.quotas),
  });
}
