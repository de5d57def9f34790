/**
 * Freeze injection (issue 35): the real launcher with its supervised children, a steady ingest and a
 * start before each fault, then SIGSTOP of FerretDB, of PostgreSQL with every backend, of the Temporal
 * server, of the worker and of the api, each for a while, then SIGCONT. A frozen process keeps its sockets open and answers
 * nothing, which no exit code shows.
 * During each freeze, and until the service is ready again, a client asks the api every half second (a
 * database read, and every other time the start sent again, which reaches Temporal too):
 * each answer comes within ANSWER_BOUND_MS (10 s; a request sent to the frozen api itself, within
 * FROZEN_API_BOUND_MS) and is a success or a 503 with Retry-After, never a 500 and never a hang; the ingest's batches are refused with nothing but 503. After each thaw the service
 * is /ready again within READY_BOUND_MS without a hand on it (the launcher's liveness probes restart a
 * child that stays stuck), ingest resumes, and at the end every start is READY or ERROR and every
 * acknowledged event is stored once.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { processTree, signalAll } from '../src/process/process-tree';
import { sandboxWorkflowId } from '../src/temporal/shared';
import { testEnv } from './helpers/env';
import { freeLauncherPorts, Launcher, sleep, until, type PID_FILES } from './helpers/launcher';
import { adminSession, expectLogIntact, steadyIngest } from './helpers/service-under-faults';

/** Every request is answered within ANSWER_DEADLINE_MS (9 s) whatever the api waits on; with a second of slack. */
const ANSWER_BOUND_MS = 10_000;
/**
 * A frozen api answers nothing: what reaches it waits in the kernel's queue of its listening socket (held
 * by the launcher, so it outlives the process) until its probes find it out (about 20 s) and a new api takes
 * the queue, or the connection breaks. Only requests sent to a frozen api get this bound.
 */
const FROZEN_API_BOUND_MS = 45_000;
/** Probes every 5 s, each bounded at 5 s; FerretDB and PostgreSQL are restarted after 12 failures in a row (about 90 s); with slack. */
const READY_BOUND_MS = 150_000;

const FREEZES: { name: keyof typeof PID_FILES; ms: number; restarted?: true }[] = [
  { name: 'ferretdb', ms: 40_000 },
  { name: 'postgres', ms: 45_000 }, // the stall that left FerretDB's pool stuck for good
  { name: 'temporal', ms: 20_000 },
  // Its heartbeat goes stale after 10 s; three failed probes later it is killed and started again.
  { name: 'worker', ms: 40_000, restarted: true },
  // Nothing answers for a frozen api itself: its probes find it out (about 20 s) and it is started again.
  // The requests it held end with a broken connection, as for a crash; a client sends them again.
  { name: 'api', ms: 30_000, restarted: true },
];

/** Every SandboxStatus the sandbox's workflow published, in order (its search attribute upserts). */
async function publishedStatuses(temporalPort: number, sandboxId: string): Promise<string[]> {
  const connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
  try {
    const history = await new Client({ connection, namespace: 'default' }).workflow
      .getHandle(sandboxWorkflowId(sandboxId))
      .fetchHistory();
    return (history.events ?? []).flatMap((e) => {
      const data =
        e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.SandboxStatus?.data;
      return data ? [JSON.parse(Buffer.from(data).toString('utf8')) as string] : [];
    });
  } finally {
    await connection.close();
  }
}

describe('freeze injection', () => {
  let launcher: Launcher;
  let llm: ScriptedLlm;
  let ingest: ReturnType<typeof steadyIngest> | undefined;

  beforeAll(async () => {
    launcher = new Launcher(path.join(testEnv().dir, 'freeze-injection-data'), await freeLauncherPorts(), {
      START_TASK_RECONCILE_AFTER_MS: '5000',
    });
    llm = await new ScriptedLlm([]).start();
  });

  afterAll(async () => {
    await ingest?.stop();
    for (const pid of launcher?.pids() ?? []) signalAll(processTree(pid), 'SIGCONT');
    launcher?.killAll();
    await llm?.close();
  });

  it('SIGSTOP of FerretDB, PostgreSQL, Temporal, the worker and the api in turn: bounded 503s or answers meanwhile, ready again after, nothing lost', async () => {
    const l = launcher.launch();
    await launcher.waitUp(l);
    const { key, call, taskOf } = await adminSession(launcher, l, llm.url);
    const first = (await call('POST', '/api/v1/app-conversations', {})).body;
    await until('the first start is READY', async () => (await taskOf(first.id))?.status === 'READY', 120_000);
    const conversationId = first.id as string;
    const sandboxId = (await taskOf(first.id)).sandbox_id as string;
    const sessionKey = (await call('GET', `/api/v1/sandboxes?id=${sandboxId}`)).body[0].session_api_key as string;
    ingest = steadyIngest(launcher.ports.api, conversationId, sessionKey);

    const starts: string[] = [first.id];
    const figures: string[] = [];
    for (const { name, ms, restarted } of FREEZES) {
      await ingest.goesOn(3, 90_000);
      // A start under way as the freeze lands; sent again until taken, as a client would (the same id joins).
      const id = randomUUID();
      await until(
        `start ${id} accepted`,
        async () =>
          (await call('POST', '/api/v1/app-conversations', { conversation_id: id, sandbox_id: sandboxId })).status ===
          200,
        90_000,
      );
      starts.push(id);

      const pid = launcher.pidOf(name)!;
      const frozen = processTree(pid); // PostgreSQL: the postmaster and every backend
      signalAll(frozen, 'SIGSTOP');
      const frozenAt = Date.now();
      const answers: { status: number | string; ms: number; retryAfter: string | null; toFrozenApi: boolean }[] = [];
      const asking: Promise<void>[] = [];
      let thawedAt = 0;
      let readyMs = -1;
      // Asked through the freeze and on until the service is ready again (when a stuck child is restarted):
      // a read of the database, and every other time the start sent again (a database read, then Temporal).
      for (let tick = 0; readyMs < 0; tick++) {
        const t0 = Date.now();
        const toFrozenApi = name === 'api' && launcher.pidOf('api') === pid;
        const request: [string, RequestInit] =
          tick % 2 === 0
            ? ['/api/v1/users/me', {}]
            : [
                '/api/v1/app-conversations',
                { method: 'POST', body: JSON.stringify({ conversation_id: id, sandbox_id: sandboxId }) },
              ];
        asking.push(
          launcher
            .api(request[0], key, { ...request[1], signal: AbortSignal.timeout(FROZEN_API_BOUND_MS + 20_000) })
            .then(async (r) => {
              await r.text();
              answers.push({
                status: r.status,
                ms: Date.now() - t0,
                retryAfter: r.headers.get('retry-after'),
                toFrozenApi,
              });
            })
            .catch(
              (e: Error) => void answers.push({ status: e.name, ms: Date.now() - t0, retryAfter: null, toFrozenApi }),
            ),
        );
        await sleep(500);
        if (!thawedAt && Date.now() - frozenAt >= ms) {
          signalAll(frozen, 'SIGCONT');
          thawedAt = Date.now();
        }
        if (
          thawedAt &&
          (await launcher.api('/ready', undefined, { signal: AbortSignal.timeout(5000) }).then(
            (r) => r.status === 200,
            () => false,
          ))
        )
          readyMs = Date.now() - thawedAt;
        if (thawedAt && readyMs < 0 && Date.now() - thawedAt > READY_BOUND_MS)
          throw new Error(`not /ready ${READY_BOUND_MS / 1000} s after ${name} thawed:\n${l.output().slice(-3000)}`);
      }
      await Promise.all(asking);
      await ingest.goesOn(1, READY_BOUND_MS, `ingest resumes after ${name}`);

      // Every answer came in time, and was a success or a 503 that says when to try again.
      // With the api's errors beside them, when there are any: what a 500 was.
      const errors = () => [
        ...fs
          .readFileSync(path.join(launcher.dataDir, 'logs', 'api.log'), 'utf8')
          .split('\n')
          .filter((line) => line.includes('"level":50'))
          .slice(-3),
        ...l
          .output()
          .split('\n')
          .filter((line) => /answer|liveness|restart/.test(line))
          .slice(-8),
      ];
      // A frozen api cannot answer; what it held breaks when it is killed ('TypeError: fetch failed'), in time.
      const broken = (a: (typeof answers)[number]) => name === 'api' && a.status === 'TypeError';
      const late = answers.filter(
        (a) =>
          (typeof a.status !== 'number' && !broken(a)) ||
          a.ms > (a.toFrozenApi ? FROZEN_API_BOUND_MS : ANSWER_BOUND_MS),
      );
      expect({ late, errors: late.length ? errors() : [] }).toEqual({ late: [], errors: [] });
      const wrong = answers.filter((a) => a.status !== 200 && !(a.status === 503 && a.retryAfter) && !broken(a));
      expect({ wrong, errors: wrong.length ? errors() : [] }).toEqual({ wrong: [], errors: [] });
      expect(l.child.exitCode).toBeNull();
      if (restarted) expect(launcher.pidOf(name)).not.toBe(pid);
      const refused = Object.keys(ingest.counts.refused).filter(
        (status) => status !== '503' && !(name === 'api' && status === 'TypeError'),
      );
      expect({ refused, errors: refused.length ? errors() : [] }).toEqual({ refused: [], errors: [] });
      const slowest = Math.max(...answers.filter((a) => !a.toFrozenApi).map((a) => a.ms));
      const slowestToFrozen = Math.max(0, ...answers.filter((a) => a.toFrozenApi).map((a) => a.ms));
      figures.push(
        `${name} frozen ${ms / 1000} s: ${answers.length} requests, ${answers.filter((a) => a.status === 503).length} answered 503, slowest ${(slowest / 1000).toFixed(1)} s${name === 'api' ? ` (${(slowestToFrozen / 1000).toFixed(1)} s of one sent to the frozen api)` : ''}, ingest refused ${JSON.stringify(ingest.counts.refused)}; ` +
          `/ready ${(readyMs / 1000).toFixed(1)} s after the thaw${launcher.pidOf(name) !== pid ? ` (${name} restarted by its probes)` : ''}`,
      );
    }
    await ingest.stop();

    const ended = async () =>
      (await Promise.all(starts.map(taskOf))).every((t) => t && ['READY', 'ERROR'].includes(t.status));
    await until('every start READY or ERROR', ended, 180_000);
    const final = await Promise.all(starts.map(taskOf));
    // How long each start took, from its record to READY or ERROR (the first one ran before any freeze).
    const took = final.map(
      (t) => `${((Date.parse(t.updated_at) - Date.parse(t.created_at)) / 1000).toFixed(1)} s ${t.status}`,
    );
    await expectLogIntact(launcher, conversationId, ingest.acknowledged);
    // The database frozen for longer than the health grace period is no verdict on the runtime: the
    // sandbox was never published as anything but RUNNING (its health checks could not be made).
    expect(await publishedStatuses(launcher.ports.temporal, sandboxId)).toEqual(['STARTING', 'RUNNING']);
    console.log(
      `freeze injection: ${figures.join('; ')}; starts (before the ${FREEZES.map((f) => f.name).join(', ')} freezes) ${took.slice(1).join(', ')}; ${ingest.counts.batches} batches acknowledged`,
    );

    expect((await call('DELETE', `/api/v1/sandboxes/${sandboxId}`)).status).toBe(200);
    l.child.kill('SIGINT');
    expect(await l.exited).toBe(0);
  }, 900_000);
});
