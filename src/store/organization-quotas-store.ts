/**
 * Quotas an operator set for one organization (`agent-control-admin org quotas`), over the defaults of
 * the configuration (ORG_MAX_*). Operator data, not an organization setting: no api route reads or
 * writes it, and an organization's owners cannot raise their own.
 */
import type { Db } from 'mongodb';

/** A number replaces the default (0: no limit); null or absent: the default holds. */
export interface OrganizationQuotaOverrides {
  running_sandboxes?: number | null;
  concurrent_starts?: number | null;
}

type QuotasDoc = OrganizationQuotaOverrides & { _id: string; updated_at: Date };

export class OrganizationQuotasStore {
  constructor(private readonly db: Db) {}

  private get quotas() {
    return this.db.collection<QuotasDoc>('organization_quotas');
  }

  async get(orgId: string): Promise<OrganizationQuotaOverrides> {
    const d = await this.quotas.findOne({ _id: orgId });
    return d ? { running_sandboxes: d.running_sandboxes ?? null, concurrent_starts: d.concurrent_starts ?? null } : {};
  }

  /** Sets the given overrides (null puts the default back for that one); the others stay. */
  async set(orgId: string, overrides: OrganizationQuotaOverrides): Promise<OrganizationQuotaOverrides> {
    const set = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
    await this.quotas.updateOne({ _id: orgId }, { $set: { ...set, updated_at: new Date() } }, { upsert: true });
    return this.get(orgId);
  }
}
