/** Organization records, stored with their secrets sealed (see src/orgs/organization-secrets.ts). */
import type { Db } from 'mongodb';
import type { Organization } from '../schemas/organizations';
import { decodeKeys, encodeKeys } from './key-codec';
import type { CollectionIndexes } from './mongo';

type OrganizationDoc = Omit<Organization, 'id'> & { _id: string; created_at: Date; updated_at: Date };

export const organizationsIndexes: CollectionIndexes = { collection: 'organizations', indexes: [] };

/** Settings hold free-form objects: their keys are stored escaped (key-codec). */
const toOrganization = ({ _id, created_at: _c, updated_at: _u, ...rest }: OrganizationDoc): Organization =>
  decodeKeys({ id: _id, ...rest });

export class OrganizationsStore {
  constructor(private readonly db: Db) {}

  private get orgs() {
    return this.db.collection<OrganizationDoc>('organizations');
  }

  async insert(org: Organization): Promise<void> {
    const { id, ...rest } = org;
    const now = new Date();
    await this.orgs.insertOne({ _id: id, ...encodeKeys(rest), created_at: now, updated_at: now });
  }

  async get(id: string): Promise<Organization | null> {
    const d = await this.orgs.findOne({ _id: id });
    return d && toOrganization(d);
  }

  async getMany(ids: readonly string[]): Promise<Organization[]> {
    const docs = await Promise.all(ids.map((id) => this.get(id)));
    return docs.filter((d): d is Organization => d !== null);
  }

  /** Replaces the record with `next`, whose org_version is one more than `expectedVersion`. */
  async replace(next: Organization, expectedVersion: number): Promise<boolean> {
    const { id, ...rest } = next;
    const r = await this.orgs.updateOne(
      { _id: id, org_version: expectedVersion },
      { $set: { ...encodeKeys(rest), updated_at: new Date() } },
    );
    return r.matchedCount === 1;
  }
}
