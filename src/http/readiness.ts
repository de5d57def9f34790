/**
 * Readiness: the api serves only when MongoDB answers (and its indexes exist) and Temporal answers for
 * the configured namespace. Each check is bounded by READY_TIMEOUT_MS so /ready itself never hangs.
 */
import type { Connection } from '@temporalio/client';
import type { Db } from 'mongodb';

export type CheckResult = { ok: true } | { ok: false; error: string };

export interface ReadinessReport {
  ready: boolean;
  checks: { mongodb: CheckResult; temporal: CheckResult };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export class Readiness {
  /** Checks still running after /ready answered (a timed-out call); awaited before connections close. */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly deps: {
      db: Db;
      temporal: Connection;
      namespace: string;
      timeoutMs: number;
      /** Resolves once start-up work on the database (indexes) is done. */
      databasePrepared: () => boolean;
    },
  ) {}

  private async check(fn: () => Promise<unknown>, what: string): Promise<CheckResult> {
    const call = fn();
    this.inFlight.add(call);
    void call.then(
      () => this.inFlight.delete(call),
      () => this.inFlight.delete(call),
    );
    try {
      await withTimeout(call, this.deps.timeoutMs, what);
      return { ok: true };
    } catch (e) {
      return { ok: false, error: (e as Error).message };
    }
  }

  /** Waits for checks that outlived their answer, so closing a connection never cuts one short. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  async report(): Promise<ReadinessReport> {
    const { db, temporal, namespace, timeoutMs } = this.deps;
    const [mongodb, temporalCheck] = await Promise.all([
      this.check(async () => {
        await db.command({ ping: 1 });
        if (!this.deps.databasePrepared()) throw new Error('indexes are still being created');
      }, 'MongoDB'),
      this.check(
        () =>
          temporal.withDeadline(Date.now() + timeoutMs, () =>
            temporal.workflowService.describeNamespace({ namespace }),
          ),
        'Temporal',
      ),
    ]);
    return { ready: mongodb.ok && temporalCheck.ok, checks: { mongodb, temporal: temporalCheck } };
  }
}
