/** Who belongs to which organization, and as what (owner, admin, member). */
import type { Db } from 'mongodb';
import type { Role } from '../schemas/organizations';
import type { CollectionIndexes } from './mongo';

interface MembershipDoc {
  /** `<organization id>/<user id>`: one membership per pair, looked up by `_id`. */
  _id: string;
  organization_id: string;
  user_id: string;
  role: Role;
  created_at: Date;
}

export interface Membership {
  organization_id: string;
  user_id: string;
  role: Role;
}

export const membershipsIndexes: CollectionIndexes = {
  collection: 'memberships',
  indexes: [
    { key: { user_id: 1, organization_id: 1 }, name: 'by_user' },
    { key: { organization_id: 1, user_id: 1 }, name: 'by_organization' },
  ],
};

const key = (orgId: string, userId: string) => `${orgId}/${userId}`;
const toMembership = ({ organization_id, user_id, role }: MembershipDoc): Membership => ({
  organization_id,
  user_id,
  role,
});

export class MembershipsStore {
  constructor(private readonly db: Db) {}

  private get memberships() {
    return this.db.collection<MembershipDoc>('memberships');
  }

  /** Adds the user, or changes their role. */
  async put(orgId: string, userId: string, role: Role): Promise<void> {
    await this.memberships.updateOne(
      { _id: key(orgId, userId) },
      { $set: { organization_id: orgId, user_id: userId, role }, $setOnInsert: { created_at: new Date() } },
      { upsert: true },
    );
  }

  async remove(orgId: string, userId: string): Promise<boolean> {
    return (await this.memberships.deleteOne({ _id: key(orgId, userId) })).deletedCount === 1;
  }

  async role(orgId: string, userId: string): Promise<Role | null> {
    const d = await this.memberships.findOne({ _id: key(orgId, userId) });
    return d?.role ?? null;
  }

  /** The user's organizations by id, `limit` at a time after `afterOrgId`. */
  async pageForUser(
    userId: string,
    limit: number,
    afterOrgId?: string,
  ): Promise<{ items: Membership[]; last: string | null }> {
    const filter = afterOrgId ? { user_id: userId, organization_id: { $gt: afterOrgId } } : { user_id: userId };
    const docs = await this.memberships
      .find(filter)
      .sort({ organization_id: 1 })
      .limit(limit + 1)
      .toArray();
    const page = docs.slice(0, limit).map(toMembership);
    return { items: page, last: docs.length > limit ? page[page.length - 1]!.organization_id : null };
  }

  async members(orgId: string): Promise<Membership[]> {
    return (await this.memberships.find({ organization_id: orgId }).sort({ user_id: 1 }).toArray()).map(toMembership);
  }
}
