/** Runs the real api (real MongoDB-wire server, real Temporal) on an ephemeral loopback port. */
import pino from 'pino';
import { startApiServer, type ApiServer } from '../../src/api/server';
import type { Config } from '../../src/config';
import type { Logger } from '../../src/logger';
import { generateApiKey } from '../../src/auth/api-key';
import { SecretBox } from '../../src/auth/secret-box';
import { createServices, createStores, type SealingStores, type Services } from '../../src/composition';
import type { OrganizationsService } from '../../src/orgs/organizations-service';
import type { ApiKeysStore } from '../../src/store/api-keys-store';
import type { ConversationsStore } from '../../src/store/conversations-store';
import { openDatabase, type Database } from '../../src/store/mongo';
import type { UsersStore } from '../../src/store/users-store';
import { testConfig, uniqueName } from './env';
import { documentedAnswers } from './openapi-answers';

export interface TestApi {
  url: string;
  /** The running server; a test that restarts the api replaces it. */
  api: ApiServer;
  config: Config;
  /** A separate client on the same database, for assertions on what was stored. */
  database: Database;
  /** Every store over `database` (user secrets sealed with `box`), and the services over them. */
  stores: SealingStores;
  services: Services;
  users: UsersStore;
  apiKeys: ApiKeysStore;
  conversations: ConversationsStore;
  orgs: OrganizationsService;
  box: SecretBox;
  /** A conversation of the user, with the session key its (future) sandbox reports events with. */
  newConversation(userId: string): Promise<{ conversationId: string; sessionKey: string }>;
  /** POST a batch to the webhook with the session key. */
  ingest(
    conversationId: string,
    sessionKey: string,
    events: unknown,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** A new user and one of its raw API keys. */
  newUser(): Promise<{ userId: string; key: string }>;
  /** Sets the LLM of the key's current organization (PATCH /api/organizations/{id}); throws unless 200. */
  setOrgLlm(key: string, llm: { model: string; base_url: string; api_key?: string }): Promise<void>;
  /** GET/POST... against the api; JSON in and out. */
  request(
    method: string,
    path: string,
    opts?: {
      key?: string;
      body?: unknown;
      rawBody?: string;
      headers?: Record<string, string>;
      signal?: AbortSignal;
      /** Why this answer is not checked against the document (a 500 provoked on purpose); checked otherwise. */
      undocumented?: string;
    },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

/** An answer of the api that its own document does not allow (a status it does not list, a body its schema refuses). */
export class UndocumentedAnswer extends Error {
  constructor(method: string, path: string, status: number, body: unknown, errors: string[]) {
    super(
      `${method} ${path} answered ${status}, which the api's document does not allow: ${errors.slice(0, 12).join('; ')}` +
        `${errors.length > 12 ? ` (and ${errors.length - 12} more)` : ''}\n` +
        `body: ${JSON.stringify(body)?.slice(0, 2000)}`,
    );
    this.name = 'UndocumentedAnswer';
  }
}

export async function startTestApi(
  config: Config = testConfig(),
  logger: Logger = pino({ level: 'silent' }),
  opts: { waitPrepared?: boolean } = {},
): Promise<TestApi> {
  const api = await startApiServer(
    config,
    { mongoUri: config.mongo.uri!, temporalAddress: config.temporal.address! },
    logger,
  );
  // Tests start when the api serves everything (its live channel too), as clients of `npm start` do.
  if (opts.waitPrepared ?? true) await api.prepared;
  // Every answer below is checked against the document this api serves.
  const documented = documentedAnswers(await (await fetch(`${api.url}/openapi.json`)).json());
  const database = openDatabase(config.mongo.uri!, config.mongo.db);
  const box = new SecretBox(config.secretsKey!);
  const stores = createStores(database.db, { box });
  const services = createServices(stores, { box });
  const { users, apiKeys, conversations } = stores;
  const orgs = services.organizations;
  const request: TestApi['request'] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers['X-Access-Token'] = opts.key;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(self.api.url + path, { method, headers, body, signal: opts.signal });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    const errors = opts.undocumented
      ? []
      : documented(method, path, res.status, parsed, res.headers.get('content-type'));
    if (errors.length > 0) throw new UndocumentedAnswer(method, path, res.status, parsed, errors);
    return { status: res.status, body: parsed, headers: res.headers };
  };
  const self: TestApi = {
    url: api.url,
    api,
    config,
    database,
    stores,
    services,
    users,
    apiKeys,
    conversations,
    orgs,
    box,
    async newConversation(userId) {
      const sessionKey = generateApiKey();
      const c = await conversations.create({ userId, sessionApiKey: sessionKey });
      return { conversationId: c.id, sessionKey };
    },
    ingest: (conversationId, sessionKey, events) =>
      request('POST', `/api/v1/webhooks/events/${conversationId}`, {
        body: events,
        headers: { 'X-Session-API-Key': sessionKey },
      }),
    async newUser() {
      const user = await orgs.createUser(`${uniqueName('user')}@example.com`);
      const { raw } = await apiKeys.create(user.id, 'test');
      return { userId: user.id, key: raw };
    },
    async setOrgLlm(key, llm) {
      const me = await request('GET', '/api/v1/users/me', { key });
      const patched = await request('PATCH', `/api/organizations/${me.body.current_org_id}`, {
        key,
        body: { agent_settings: { agent_kind: 'platform', llm } },
      });
      if (patched.status !== 200)
        throw new Error(`PATCH organization: ${patched.status} ${JSON.stringify(patched.body)}`);
    },
    request,
    async close() {
      await self.api.close(); // the current server: a test may have restarted it
      await database.db.dropDatabase().catch(() => undefined);
      await database.close();
    },
  };
  return self;
}
