/**
 * stream-start follows the start-task workflow (START_STREAM_FOLLOW=workflow, the default): each status
 * reaches the stream as the answer of the workflow's snapshotsAfter Update, and the stream keeps every
 * status once, in order, through a worker killed with -9 mid-start, an api restarted mid-stream, and a
 * time with no worker at all (the stored record is read until one answers). The worker runs as its own
 * process so it can be killed.
 */
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { startApiServer } from '../src/api/server';
import { AgentControlClient, type StartTask } from '../src/client';
import { START_TASK_STATUSES } from '../src/schemas/app-conversations';
import { freePort } from '../src/process/net';
import { startTaskWorkflowId } from '../src/temporal/shared';
import type { TestApi } from './helpers/api';
import { eventually } from './helpers/eventually';
import { bareRepo } from './helpers/git-repo';
import { parsePrometheus, sampleOf } from './helpers/prometheus';
import { startServiceUnderTest, type ServiceUnderTest } from './helpers/service';
import { setUnusedOrgLlm } from './helpers/start-tasks';
import { workerProcesses } from './helpers/worker';

const ALL = START_TASK_STATUSES.filter((s) => s !== 'ERROR');
const ANSWER_TIMEOUT_MS = 1500;

describe('stream-start follows the workflow', () => {
  let service: ServiceUnderTest;
  let t: TestApi;
  let dataDir: string;
  let user: { userId: string; key: string };
  let client: AgentControlClient;
  const workers = workerProcesses(
    () => t.config,
    () => dataDir,
  );
  const newWorker = workers.start;
  const killWorker = workers.kill;
  /** A stream read by the typed client: each snapshot as it arrives, and the time it arrived. */
  const streamed = (request: Parameters<AgentControlClient['startConversation']>[0]) => {
    const got: { task: StartTask; at: number }[] = [];
    const iterator = client.startConversation(request);
    const next = async (until: (s: StartTask) => boolean) => {
      for (;;) {
        const r = await iterator.next();
        if (r.done) return undefined;
        got.push({ task: r.value, at: Date.now() });
        if (until(r.value)) return r.value;
      }
    };
    return { got, next, statuses: () => got.map((g) => g.task.status) };
  };

  /** The snapshotsAfter Updates in the task's workflow history: accepted, and the statuses each completed one returned. */
  const updatesOf = async (taskId: string) => {
    const history = await (await service.temporal()).workflow.getHandle(startTaskWorkflowId(taskId)).fetchHistory();
    const events = history.events ?? [];
    const accepted = events.filter(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'snapshotsAfter',
    );
    const answered = events
      .filter((e) => e.workflowExecutionUpdateCompletedEventAttributes?.outcome?.success)
      .map(
        (e) =>
          JSON.parse(
            Buffer.from(
              e.workflowExecutionUpdateCompletedEventAttributes!.outcome!.success!.payloads![0]!.data!,
            ).toString('utf8'),
          ) as { from: number; snapshots: StartTask[]; done: boolean },
      );
    return { accepted: accepted.length, answered };
  };

  /** The api's stream-start reads so far, by source (agent_control_start_stream_reads_total, through Prometheus' parser). */
  const reads = async () => {
    const families = await parsePrometheus(await (await fetch(`http://${t.config.metrics.apiAddress}/metrics`)).text());
    const of = (source: string) => sampleOf(families, 'agent_control_start_stream_reads_total', { source })?.value ?? 0;
    return { update: of('update'), record: of('record') };
  };
  const readsSince = async (before: Awaited<ReturnType<typeof reads>>) => {
    const now = await reads();
    return { update: now.update - before.update, record: now.record - before.record };
  };

  beforeAll(async () => {
    // Its workers are processes of their own (workerProcesses), so a test can kill them.
    service = await startServiceUnderTest(
      'stream-follow-',
      {
        METRICS_ADDRESS: `127.0.0.1:${await freePort()}`,
        SANDBOX_IDLE_TIMEOUT_MS: '0',
        WORKFLOW_ANSWER_TIMEOUT_MS: String(ANSWER_TIMEOUT_MS),
      },
      { worker: false },
    );
    ({ t, dataDir } = service);
    expect(t.config.starts.streamFollow).toBe('workflow');
    user = await t.newUser();
    client = new AgentControlClient({ baseUrl: t.url, apiKey: user.key });
    await setUnusedOrgLlm(t, user.key);
    await newWorker();
  });

  afterAll(async () => {
    await workers.killAll();
    await service?.close();
  });

  it('every status once, in order, each one the answer of an Update the workflow completed or of a record read', async () => {
    const before = await reads();
    const repo = bareRepo(dataDir, 'plain', { '.agents/setup.sh': 'sleep 1\n' });
    const s = streamed({ selected_repository: repo });
    expect((await s.next((x) => x.status === 'READY' || x.status === 'ERROR'))?.status).toBe('READY');
    expect(s.statuses()).toEqual(ALL);
    const id = s.got[0]!.task.id;
    const read = await readsSince(before);

    const { accepted, answered } = await updatesOf(id);
    expect(accepted).toBeGreaterThanOrEqual(answered.length);
    // The Updates' answers, laid end to end by position, are the list the stream wrote, as far as they go:
    // the stream came from the workflow. What came after the last answer (READY and the close come in one
    // workflow task) was read from the record, as was what the first read found.
    const byPosition: string[] = [];
    for (const a of answered) a.snapshots.forEach((x, i) => (byPosition[a.from + i] = x.status));
    expect(byPosition).toEqual(ALL.slice(0, byPosition.length));
    expect(byPosition.length).toBeGreaterThanOrEqual(ALL.length - 2);
    // Each answer came when the list grew: with a one-second setup script, most statuses came one per answer.
    expect(answered.length).toBeGreaterThanOrEqual(3);
    expect(read.update).toBeGreaterThanOrEqual(3);
    expect(read.record).toBeGreaterThanOrEqual(1); // the first read goes to the record
  }, 90_000);

  it('kill -9 of the worker mid-start: the same stream goes on with the next worker, no status dropped or repeated', async () => {
    const repo = bareRepo(dataDir, 'killed', {
      '.agents/setup.sh': 'echo started >> setup.log\nsleep 4\necho done >> setup.log\n',
    });
    const s = streamed({ selected_repository: repo });
    const running = await s.next((x) => x.status === 'RUNNING_SETUP_SCRIPT');
    expect(running).toBeDefined();
    const log = path.join(dataDir, 'sandboxes', running!.sandbox_id!, 'workspace', 'killed', 'setup.log');
    await eventually(() => fs.existsSync(log), { what: `${log} written`, timeoutMs: 30_000, intervalMs: 50 });
    await killWorker(workers.all.at(-1)!);
    // Longer than the bound a worker has to accept the Update: the stream reads the record meanwhile.
    await new Promise((r) => setTimeout(r, 2 * ANSWER_TIMEOUT_MS));
    await newWorker();
    expect((await s.next((x) => x.status === 'READY' || x.status === 'ERROR'))?.status).toBe('READY');
    expect(s.statuses()).toEqual(ALL);
    expect(fs.readFileSync(log, 'utf8')).toMatch(/done\n$/);
  }, 120_000);

  it('the api restarts mid-stream: the stream joined again with the conversation_id gives every status, in order, to READY', async () => {
    const repo = bareRepo(dataDir, 'restarted', { '.agents/setup.sh': 'sleep 5\n' });
    const first = streamed({ selected_repository: repo });
    const running = await first.next((x) => x.status === 'RUNNING_SETUP_SCRIPT');
    const id = running!.id;
    t.api.server.closeAllConnections();
    await t.api.close();
    await expect(first.next(() => false)).rejects.toThrow(); // the stream was cut
    t.api = await startApiServer(
      t.config,
      { mongoUri: t.config.mongo.uri!, temporalAddress: t.config.temporal.address! },
      pino({ level: 'silent' }),
    );
    const again = streamed({ conversation_id: id, selected_repository: repo });
    expect((await again.next((x) => x.status === 'READY' || x.status === 'ERROR'))?.status).toBe('READY');
    expect(again.statuses()).toEqual(ALL);
    expect(new Set(again.got.map((g) => g.task.id))).toEqual(new Set([id]));
    // The join was still running when it started: it saw the setup script end, not a finished task.
    expect(again.got.findIndex((g) => g.task.status === 'SETTING_UP_GIT_HOOKS')).toBeGreaterThan(0);
    expect((await updatesOf(id)).answered.length).toBeGreaterThanOrEqual(2);
  }, 90_000);

  it('no worker answers: the stream stays open past the bound with no status invented, then gives every status to READY once a worker is back', async () => {
    await killWorker(workers.all.at(-1)!);
    const before = await reads();
    const repo = bareRepo(dataDir, 'waiting', { 'README.md': 'waiting\n' });
    const s = streamed({ selected_repository: repo });
    const firstStatus = s.next(() => true);
    // Several bounds pass: each Update no worker accepts gives way to a read of the record, which has no status yet.
    await new Promise((r) => setTimeout(r, 3 * ANSWER_TIMEOUT_MS));
    expect(s.got).toEqual([]);
    expect((await readsSince(before)).record).toBeGreaterThanOrEqual(2);
    const workerAt = Date.now();
    await newWorker();
    expect((await firstStatus)?.status).toBe('WORKING');
    expect((await s.next((x) => x.status === 'READY' || x.status === 'ERROR'))?.status).toBe('READY');
    expect(s.statuses()).toEqual(ALL);
    expect(s.got.every((g) => g.at >= workerAt)).toBe(true);
    // Each cut wait asked again with the same Update id: the asks of the wait joined one Update, they did
    // not leave one each waiting in the workflow.
    const { accepted } = await updatesOf(s.got[0]!.task.id);
    expect(accepted).toBeLessThanOrEqual(ALL.length);
  }, 90_000);
});
