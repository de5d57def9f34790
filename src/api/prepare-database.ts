/**
 * The api's start-up work on the database, run in the background while it serves: the indexes, the
 * sandbox specs and the live channel (readiness waits for these), then PostgreSQL's indexes and the
 * move of older conversation logs onto the block layout (nothing waits for those).
 */
import type { Db } from 'mongodb';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SealingStores } from '../composition';
import type { Config } from '../config';
import { migrateEventLayouts } from '../events/event-layout-migration';
import type { EventHub } from '../live/event-hub';
import type { LiveChannel } from '../live/live-channel';
import type { Logger } from '../logger';
import type { SandboxSpecInput } from '../schemas/sandboxes';
import { ALL_INDEXES } from '../store/indexes';
import { ensureIndexes } from '../store/mongo';
import { ensurePostgresIndexes } from '../store/postgres-indexes';

/** What the api's start and close share: the preparation sets `prepared`, close() sets `closing`. */
export interface ApiLifecycle {
  prepared: boolean;
  closing: boolean;
}

export interface DatabasePreparationDeps {
  db: Db;
  stores: SealingStores;
  specs: SandboxSpecInput[];
  live: LiveChannel;
  hub: EventHub;
  config: Config;
  logger: Logger;
}

/** Retries until the database is prepared or the api closes; then starts the work nothing waits for. */
export async function prepareDatabase(deps: DatabasePreparationDeps, lifecycle: ApiLifecycle): Promise<void> {
  const { db, stores, specs, live, hub, config, logger } = deps;
  for (let attempt = 1; !lifecycle.closing; attempt++) {
    try {
      await ensureIndexes(db, ALL_INDEXES);
      if (!(await stores.events.probeBlockReads()))
        logger.warn(
          'the database scans the event log for every query but one by _id (FerretDB on SQLite): pages and catch-ups read it sorted, not by blocks',
        );
      await stores.sandboxSpecs.upsert(specs);
      await live.start(
        (doc) => hub.dispatch(doc),
        () => hub.hasSubscribers,
      ); // ready once it reads from the head
      lifecycle.prepared = true;
      logger.debug('indexes ensured');
      if (config.postgres.url) void makePostgresIndexes(deps, lifecycle, config.postgres.url);
      void moveEventLayouts(deps, lifecycle);
      return;
    } catch (e) {
      if (attempt === 1 || attempt % 10 === 0) logger.warn({ err: e }, 'creating indexes failed; retrying');
      await sleep(Math.min(5000, 250 * attempt));
    }
  }
}

/**
 * The PostgreSQL indexes only make queries faster: the api serves without them, so their absence is
 * an error in the log (with PostgreSQL's own message), retried with a growing wait, not a 503.
 */
async function makePostgresIndexes(
  { db, logger }: DatabasePreparationDeps,
  lifecycle: ApiLifecycle,
  url: string,
): Promise<void> {
  for (let attempt = 1; !lifecycle.closing; attempt++) {
    try {
      const outcome = await ensurePostgresIndexes(db, url, ALL_INDEXES);
      if ('skipped' in outcome)
        logger.warn(`no PostgreSQL indexes made, queries scan whole tables: ${outcome.skipped}`);
      else logger.debug({ made: outcome.made }, 'PostgreSQL indexes ensured');
      return;
    } catch (e) {
      const wait = Math.min(60_000, 1000 * 2 ** Math.min(attempt, 6));
      logger.error(
        { err: e },
        `making the PostgreSQL indexes failed (POSTGRES_URL; queries scan whole tables meanwhile): ${(e as Error).message}; trying again in ${wait / 1000} s`,
      );
      await new Promise((r) => setTimeout(r, wait).unref());
    }
  }
}

/** Conversations stored before the block layout are moved onto it in the background (src/events/event-layout-migration.ts). */
async function moveEventLayouts({ stores, logger }: DatabasePreparationDeps, lifecycle: ApiLifecycle): Promise<void> {
  try {
    const moved = await migrateEventLayouts(
      { conversations: stores.conversations, events: stores.events, log: logger },
      { stopped: () => lifecycle.closing },
    );
    if (moved > 0) logger.info({ moved }, 'conversation logs moved to the block layout');
  } catch (e) {
    logger.error(
      { err: e },
      'moving conversation logs to the block layout failed; their pages are read the older way until the next start',
    );
  }
}
