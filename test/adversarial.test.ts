/**
 * The project's adversarial suite (issue 13), its generated requests: hostile requests generated from the
 * service's own OpenAPI document for every operation, against the real api on the real servers. Asserted
 * for every answer: never a 5xx; every error body well-formed (422: HTTPValidationError; others: {detail:
 * string}); a refused write changes nothing; and after each operation's batch the service is healthy and
 * its memory bounded. Raw bytes on the HTTP port and random socket frames: adversarial-sockets.test.ts.
 *
 * No worker runs: starts and sandboxes stay pending, so the generated inputs reach the api's own code
 * without starting processes. fast-check prints the seed and the smallest failing request on failure.
 */
import fc from 'fast-check';
import net from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { TestApi } from './helpers/api';
import { expectHealthy, logTally, newTally, ownConversation, startAdversarialApi } from './helpers/adversarial';
import { messages } from './helpers/event-samples';
import { operationsOf, requestsFor, type HostileRequest, type Operation } from './helpers/hostile-arbitraries';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
/** Heap in use after a full collection: what the process really keeps. */
const heapKept = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const RUNS_PER_OPERATION = Number(process.env.ADVERSARIAL_RUNS ?? 30);
/** Collections a refused request may still touch (use counters, the live channel's housekeeping). */
const UNTRACKED = new Set(['sandbox_usage', 'live_events', 'ingest_leases']);
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

describe('adversarial suite', () => {
  let t: TestApi;
  let doc: any;
  let ops: Operation[];
  const own = { key: '', sessionKey: '', conversationId: '' };
  const other = { key: '', sessionKey: '', ids: [] as string[] };
  const tally = newTally();

  beforeAll(async () => {
    t = await startAdversarialApi();
    doc = (await t.request('GET', '/openapi.json')).body;
    ops = operationsOf(doc);
    Object.assign(own, await ownConversation(t));

    // Another user's things: every id of theirs must stay out of reach.
    const b = await t.newUser();
    const bc = await t.newConversation(b.userId);
    other.sessionKey = bc.sessionKey;
    await t.ingest(bc.conversationId, bc.sessionKey, messages(3));
    const bMe = (await t.request('GET', '/api/v1/users/me', { key: b.key })).body;
    const bKey = (await t.request('POST', '/api/v1/api-keys', { key: b.key, body: { name: 'b' } })).body;
    const bSandbox = (await t.request('POST', '/api/v1/sandboxes', { key: b.key, body: {} })).body;
    const bStart = (await t.request('POST', '/api/v1/app-conversations', { key: b.key, body: {} })).body;
    other.ids = [bc.conversationId, bMe.current_org_id, bKey.id, bSandbox.id, bStart.id, own.conversationId].filter(
      Boolean,
    );
    expect(other.ids.length).toBe(6);
    // "other-user" requests come from a third user who owns none of these ids (an owner's own sandbox
    // operations would rightly wait for a worker, which this suite does not run).
    other.key = (await t.newUser()).key;
  });

  afterAll(async () => {
    logTally(tally);
    await t?.close();
  });

  const collectionCounts = async (): Promise<Record<string, number>> => {
    const names = (await t.database.db.listCollections({}, { nameOnly: true }).toArray())
      .map((c) => c.name)
      .filter((n) => !UNTRACKED.has(n));
    const counts = await Promise.all(names.map((n) => t.database.db.collection(n).countDocuments()));
    return Object.fromEntries(names.map((n, i) => [n, counts[i]!]));
  };

  async function send(op: Operation, req: HostileRequest): Promise<Answer> {
    const headers: Record<string, string> = { ...req.headers };
    const credential = op.security === 'SessionAPIKeyHeader' ? 'X-Session-API-Key' : 'X-Access-Token';
    if (req.auth === 'own') headers[credential] = op.security === 'SessionAPIKeyHeader' ? own.sessionKey : own.key;
    if (req.auth === 'other-user')
      headers[credential] = op.security === 'SessionAPIKeyHeader' ? other.sessionKey : other.key;
    if (req.auth === 'wrong') headers[credential] = 'acp_' + 'A'.repeat(43);
    let res: Response;
    try {
      res = await fetch(t.url + req.url, {
        method: req.method,
        headers,
        body: req.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(20_000),
      });
    } catch (e) {
      // fetch reports a server that answers and closes while the request is still being written (a 431 for
      // a huge URL) as "other side closed": read that answer over a plain socket instead.
      if ((e as Error).name === 'TimeoutError') throw e;
      return rawExchange(req.method, req.url, headers, req.body);
    }
    const contentType = res.headers.get('content-type') ?? '';
    // A start streams until READY or ERROR, which never comes without a worker: its head is the answer.
    if (op.operationId === 'streamStartAppConversation' && res.status === 200) {
      const reader = res.body!.getReader();
      const first = await reader.read();
      await reader.cancel();
      return { status: res.status, contentType, text: new TextDecoder().decode(first.value) };
    }
    return { status: res.status, contentType, text: await res.text() };
  }

  async function rawExchange(
    method: string,
    url: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<Answer> {
    const { port } = new URL(t.url);
    const head = [
      `${method} ${url} HTTP/1.1`,
      'Host: 127.0.0.1',
      'Connection: close',
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    if (body !== undefined) head.push(`Content-Length: ${Buffer.byteLength(body)}`);
    const text = await new Promise<string>((resolve) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      let got = '';
      const timer = setTimeout(() => socket.destroy(), 20_000);
      socket.on('data', (d) => (got += d.toString('utf8')));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(got);
      });
      socket.write(`${head.join('\r\n')}\r\n\r\n${body ?? ''}`);
    });
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
    if (!status) throw new Error(`no answer at all to ${method} ${url.slice(0, 200)}`);
    const split = text.indexOf('\r\n\r\n');
    const contentType = /\r\ncontent-type: *([^\r]*)/i.exec(text.slice(0, split))?.[1] ?? '';
    return { status, contentType, text: text.slice(split + 4) };
  }

  function checkAnswer(op: Operation, req: HostileRequest, a: Answer): void {
    const where = `${op.operationId}: ${req.method} ${req.url.slice(0, 300)} (${req.auth}) body ${String(req.body).slice(0, 300)}`;
    if (a.status >= 500) throw new Error(`${a.status} for ${where}: ${a.text.slice(0, 500)}`);
    if (a.status < 400) return;
    if (!a.contentType.startsWith('application/json'))
      throw new Error(`error ${a.status} is ${a.contentType || 'untyped'}, not JSON, for ${where}`);
    const body = JSON.parse(a.text) as { detail?: unknown };
    if (a.status === 422) {
      const ok =
        Array.isArray(body.detail) &&
        body.detail.length > 0 &&
        body.detail.every((d: any) => Array.isArray(d.loc) && typeof d.msg === 'string' && typeof d.type === 'string');
      if (!ok) throw new Error(`malformed 422 body for ${where}: ${a.text.slice(0, 500)}`);
    } else if (typeof body.detail !== 'string' || body.detail === '') {
      throw new Error(`malformed ${a.status} body for ${where}: ${a.text.slice(0, 500)}`);
    }
  }

  const checkHealthy = () => expectHealthy(t);

  it('covers every operation of the OpenAPI document', () => {
    expect(ops.length).toBeGreaterThanOrEqual(30);
    const ids = ops.map((o) => o.operationId);
    expect(ids).toEqual(
      expect.arrayContaining([
        'ingestEvents',
        'searchEvents',
        'updateOrganization',
        'streamStartAppConversation',
        'startSandbox',
      ]),
    );
  });

  it('generated requests on every operation: no 5xx, well-formed errors, refused writes change nothing', async () => {
    const heapBefore = heapKept();
    let counts: Record<string, number> | undefined;
    for (const op of ops) {
      tally.operations.add(op.operationId);
      await fc.assert(
        fc.asyncProperty(requestsFor(op, doc, other.ids), async (req) => {
          // The counts as they stand, read again only after an answer that may have written (a 2xx):
          // half the reads of counting before and after every write, on the database all tests share.
          const before = WRITE_METHODS.has(req.method) ? (counts ??= await collectionCounts()) : null;
          const a = await send(op, req);
          tally.requests++;
          tally.statuses.set(a.status, (tally.statuses.get(a.status) ?? 0) + 1);
          checkAnswer(op, req, a);
          if (a.status < 400) counts = undefined;
          else if (before)
            expect({ op: op.operationId, counts: await collectionCounts() }).toEqual({
              op: op.operationId,
              counts: before,
            });
        }),
        { numRuns: RUNS_PER_OPERATION, endOnFailure: true },
      );
      await checkHealthy();
    }
    // Memory stays bounded: nothing the hostile inputs sent is kept (the jest worker holds the api, the
    // test's own tallies and fast-check; the bound is far below what one request may send, 5 MiB, times their number).
    const grown = heapKept() - heapBefore;
    tally.heapGrowthMb = Math.round(grown / 1e5) / 10;
    expect(grown).toBeLessThan(64 * 1024 * 1024);
  }, 600_000);
});
