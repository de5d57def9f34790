/**
 * Sandbox specs: the templates sandboxes start from. The built-in spec for the process provider and any
 * an operator lists in SANDBOX_SPECS_FILE are written at start-up; a spec's created_at survives rewrites.
 */
import type { Db } from 'mongodb';
import type { SandboxSpec, SandboxSpecInput } from '../schemas/sandboxes';

export interface StoredSandboxSpec extends SandboxSpec {
  created_at: Date;
}

interface SandboxSpecDoc extends Omit<StoredSandboxSpec, 'id'> {
  _id: string;
}

/** The spec a fresh install offers: the built-in runtime as a local process. */
export const DEFAULT_SANDBOX_SPEC: SandboxSpecInput = {
  id: 'local-process',
  provider: 'process',
  runtime: 'built-in',
  image: null,
  command: null,
  working_dir: 'workspace',
  initial_env: {},
  memory_mb: null,
  cpus: null,
  pids_limit: null,
  disk_mb: null,
};

/**
 * The same on the real OpenHands agent server (`DEFAULT_SANDBOX_SPEC_ID=local-process-openhands npm start`
 * runs every conversation on it; the launcher installs it first).
 */
export const OPENHANDS_SANDBOX_SPEC: SandboxSpecInput = {
  ...DEFAULT_SANDBOX_SPEC,
  id: 'local-process-openhands',
  runtime: 'openhands',
};

/** The specs every install offers. */
export const BUILT_IN_SANDBOX_SPECS: readonly SandboxSpecInput[] = [DEFAULT_SANDBOX_SPEC, OPENHANDS_SANDBOX_SPEC];

/** Specs written before the resource limits existed have none; before the runtime choice, the built-in runtime. */
const toSpec = ({ _id, ...rest }: SandboxSpecDoc): StoredSandboxSpec => ({
  id: _id,
  ...rest,
  runtime: rest.runtime ?? 'built-in',
  memory_mb: rest.memory_mb ?? null,
  cpus: rest.cpus ?? null,
  pids_limit: rest.pids_limit ?? null,
  disk_mb: rest.disk_mb ?? null,
});

export class SandboxSpecsStore {
  constructor(private readonly db: Db) {}

  private get specs() {
    return this.db.collection<SandboxSpecDoc>('sandbox_specs');
  }

  /** Writes each spec (insert, or replace its fields keeping created_at). */
  async upsert(specs: readonly SandboxSpecInput[]): Promise<void> {
    for (const { id, ...fields } of specs) {
      await this.specs.updateOne(
        { _id: id },
        { $set: fields, $setOnInsert: { created_at: new Date() } },
        { upsert: true },
      );
    }
  }

  async get(id: string): Promise<StoredSandboxSpec | null> {
    const d = await this.specs.findOne({ _id: id });
    return d && toSpec(d);
  }

  async getMany(ids: readonly string[]): Promise<Map<string, StoredSandboxSpec>> {
    const docs = await this.specs.find({ _id: { $in: [...ids] } }).toArray();
    return new Map(docs.map((d) => [d._id, toSpec(d)]));
  }

  /** Specs by id, `limit` at a time after the last id seen. */
  async page(limit: number, afterId?: string): Promise<{ items: StoredSandboxSpec[]; last: string | null }> {
    const docs = await this.specs
      .find(afterId === undefined ? {} : { _id: { $gt: afterId } })
      .sort({ _id: 1 })
      .limit(limit + 1)
      .toArray();
    const page = docs.slice(0, limit);
    return { items: page.map(toSpec), last: docs.length > limit ? page[page.length - 1]!._id : null };
  }
}
