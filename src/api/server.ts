/**
 * The api's composition root: opens MongoDB and Temporal without waiting for them, creates indexes in
 * the background (readiness waits for them), builds the Koa app and serves it.
 */
import { Connection } from '@temporalio/client';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config';
import { createApp } from '../http/app';
import type { Logger } from '../logger';
import { ApiKeysStore } from '../store/api-keys-store';
import { ALL_INDEXES } from '../store/indexes';
import { ensureIndexes, openDatabase } from '../store/mongo';
import { UsersStore } from '../store/users-store';
import { Readiness } from './readiness';

export interface ApiServer {
  url: string;
  server: http.Server;
  close(): Promise<void>;
}

export async function startApiServer(
  config: Config,
  servers: { mongoUri: string; temporalAddress: string },
  logger: Logger,
): Promise<ApiServer> {
  const database = openDatabase(servers.mongoUri, config.mongo.db, {
    serverSelectionTimeoutMs: config.mongo.serverSelectionTimeoutMs,
    appName: 'agent-control-api',
  });
  const temporal = Connection.lazy({ address: servers.temporalAddress });

  let prepared = false;
  let closing = false;
  const prepare = async () => {
    for (let attempt = 1; !closing; attempt++) {
      try {
        await ensureIndexes(database.db, ALL_INDEXES);
        prepared = true;
        logger.debug('indexes ensured');
        return;
      } catch (e) {
        if (attempt === 1 || attempt % 10 === 0) logger.warn({ err: e }, 'creating indexes failed; retrying');
        await new Promise((r) => setTimeout(r, Math.min(5000, 250 * attempt)));
      }
    }
  };
  const preparing = prepare();

  const readiness = new Readiness({
    db: database.db,
    temporal,
    namespace: config.temporal.namespace,
    timeoutMs: config.readyTimeoutMs,
    databasePrepared: () => prepared,
  });
  const app = createApp({
    config,
    logger,
    readiness,
    apiKeys: new ApiKeysStore(database.db),
    users: new UsersStore(database.db),
  });

  const server = http.createServer(app.koa.callback());
  server.requestTimeout = 0; // stream-start keeps its connection open until the start ends
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.api.port, config.api.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.api.host}:${port}`;

  return {
    url,
    server,
    async close() {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const grace = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
      await closed;
      clearTimeout(grace);
      await preparing;
      await readiness.drain();
      await temporal.close().catch(() => undefined);
      await database.close();
    },
  };
}
