/** Runs the real api (real MongoDB-wire server, real Temporal) on an ephemeral loopback port. */
import pino from 'pino';
import { startApiServer, type ApiServer } from '../../src/api/server';
import type { Config } from '../../src/config';
import type { Logger } from '../../src/logger';
import { ApiKeysStore } from '../../src/store/api-keys-store';
import { openDatabase, type Database } from '../../src/store/mongo';
import { UsersStore } from '../../src/store/users-store';
import { testConfig, uniqueName } from './env';

export interface TestApi {
  url: string;
  api: ApiServer;
  config: Config;
  /** A separate client on the same database, for assertions on what was stored. */
  database: Database;
  users: UsersStore;
  apiKeys: ApiKeysStore;
  /** A new user and one of its raw API keys. */
  newUser(): Promise<{ userId: string; key: string }>;
  /** GET/POST... against the api; JSON in and out. */
  request(method: string, path: string, opts?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

export async function startTestApi(config: Config = testConfig(), logger: Logger = pino({ level: 'silent' })): Promise<TestApi> {
  const api = await startApiServer(config, { mongoUri: config.mongo.uri!, temporalAddress: config.temporal.address! }, logger);
  const database = openDatabase(config.mongo.uri!, config.mongo.db);
  const users = new UsersStore(database.db);
  const apiKeys = new ApiKeysStore(database.db);
  return {
    url: api.url,
    api,
    config,
    database,
    users,
    apiKeys,
    async newUser() {
      const user = await users.create(`${uniqueName('user')}@example.com`);
      const { raw } = await apiKeys.create(user.id, 'test');
      return { userId: user.id, key: raw };
    },
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.key) headers['X-Access-Token'] = opts.key;
      let body: string | undefined = opts.rawBody;
      if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['Content-Type'] ??= 'application/json';
      }
      const res = await fetch(api.url + path, { method, headers, body });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        // not JSON: keep the text
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async close() {
      await api.close();
      await database.db.dropDatabase().catch(() => undefined);
      await database.close();
    },
  };
}
