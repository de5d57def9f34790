/**
 * What each worker host can run, as it last said: the provider and runtime pairs its configuration cannot
 * start at all (an OpenHands agent server it does not have, a remote provider not set up), each with why.
 * A worker says it when it starts and then at an interval; the api reads the hosts heard from lately, so
 * that a sandbox no worker could start is refused when it is asked for (409) rather than left to fail.
 */
import type { Db } from 'mongodb';
import type { RuntimeKind, SandboxProviderName } from '../schemas/sandboxes';

/** A provider and runtime pair a host cannot start, and why. */
export interface Unrunnable {
  provider: SandboxProviderName;
  runtime: RuntimeKind;
  reason: string;
}

export interface WorkerHostReport {
  host: string;
  unrunnable: Unrunnable[];
  seen_at: Date;
}

/** How often a worker says what it can run, and how long the api takes a report as current. */
export const WORKER_REPORT_EVERY_MS = 30_000;
export const WORKER_REPORT_FRESH_MS = 3 * WORKER_REPORT_EVERY_MS;

type WorkerHostDoc = { _id: string; unrunnable: Unrunnable[]; seen_at: Date };

export class WorkerHostsStore {
  constructor(private readonly db: Db) {}

  private get hosts() {
    return this.db.collection<WorkerHostDoc>('worker_hosts');
  }

  /** Records what `host` cannot run, now. */
  async report(host: string, unrunnable: Unrunnable[]): Promise<void> {
    await this.hosts.updateOne({ _id: host }, { $set: { unrunnable, seen_at: new Date() } }, { upsert: true });
  }

  /** The hosts heard from within the last `withinMs`. */
  async heardFrom(withinMs: number): Promise<WorkerHostReport[]> {
    const docs = await this.hosts
      .find({ seen_at: { $gte: new Date(Date.now() - withinMs) } })
      .limit(1000)
      .toArray();
    return docs.map((d) => ({ host: d._id, unrunnable: d.unrunnable ?? [], seen_at: d.seen_at }));
  }
}
