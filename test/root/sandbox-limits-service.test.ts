/**
 * One user's runaway sandbox does not starve another's start (as root, the machine's real cgroup
 * hierarchy): a service whose process sandboxes get a cgroup and a disk each from SANDBOX_DEFAULT_*; B's
 * spinners, fork loop, memory hog and disk filler stay in B's sandbox while A's starts and events go on in
 * about the time they take alone, and B's delete leaves no process, cgroup or mount. A sandbox's cgroup
 * limits, one by one, on the provider: sandbox-limits.test.ts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parentDirs } from '../../activities/sandbox-providers/cgroup-layout';
import { SandboxCgroups } from '../../activities/sandbox-providers/process-cgroups';
import { runtimeClient } from '../../src/sandboxes/runtime-clients';
import type { TestApi } from '../helpers/api';
import { usableCgroups } from '../helpers/cgroups';
import { TEST_CGROUP_PARENT } from '../helpers/env';
import { messages } from '../helpers/event-samples';
import { eventually } from '../helpers/eventually';
import { waitForStatus } from '../helpers/sandboxes';
import { startServiceUnderTest, type ServiceUnderTest } from '../helpers/service';
import { connect } from '../helpers/ws-client';

const layout = usableCgroups().layout;

describe("one user's runaway sandbox does not starve another's start (the service, cgroups and disks from SANDBOX_DEFAULT_*)", () => {
  let service: ServiceUnderTest;
  let t: TestApi;

  beforeAll(async () => {
    service = await startServiceUnderTest(
      'sandbox-load-',
      {
        SANDBOX_IDLE_TIMEOUT_MS: '0',
        SANDBOX_CGROUPS: 'on',
        SANDBOX_DEFAULT_MEMORY_MB: '512',
        SANDBOX_DEFAULT_CPUS: '1',
        SANDBOX_DEFAULT_PIDS_LIMIT: '256',
        SANDBOX_DISKS: 'on',
        SANDBOX_DEFAULT_DISK_MB: '256',
      },
      {
        // A's sandboxes were not deleted: their file systems go by hand.
        beforeRemove: (dataDir) => {
          for (const line of fs.readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
            const at = line.split(' ')[1];
            if (at?.startsWith(`${dataDir}/`)) execFileSync('umount', ['-l', at]);
          }
        },
      },
    );
    t = service.t;
  }, 60_000);

  afterAll(async () => {
    await service?.close();
  });

  /** A's start to READY (a new sandbox each time, as a new user's first conversation), in ms. */
  const startAlone = async () => {
    const a = await t.newUser();
    await t.setOrgLlm(a.key, { model: 'scripted-model', base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-unused' }); // a start needs one; nothing calls it
    const t0 = Date.now();
    const res = await fetch(`${t.url}/api/v1/app-conversations/stream-start`, {
      method: 'POST',
      headers: { 'X-Access-Token': a.key, 'Content-Type': 'application/json' },
      body: '{}',
      signal: AbortSignal.timeout(120_000),
    });
    const last = ((await res.json()) as { status: string; detail: string | null }[]).at(-1)!;
    expect({ status: last.status, detail: last.detail }).toEqual({ status: 'READY', detail: null });
    return Date.now() - t0;
  };

  /**
   * A's events: `n` single-event batches through the webhook, each timed from its POST to its arrival on
   * A's websocket (ms, sorted).
   */
  const eventLatencies = async (n: number) => {
    const a = await t.newUser();
    const c = await t.newConversation(a.userId);
    const ws = connect(`${t.url.replace('http', 'ws')}/api/v1/conversation/${c.conversationId}/events/socket`, {
      'X-Access-Token': a.key,
    });
    await ws.opened;
    const took: number[] = [];
    try {
      for (let i = 0; i < n; i++) {
        const t0 = Date.now();
        expect((await t.ingest(c.conversationId, c.sessionKey, messages(1))).status).toBe(200);
        await ws.waitFor(i + 1, 30_000);
        took.push(Date.now() - t0);
      }
    } finally {
      ws.ws.close();
    }
    return took.sort((x, y) => x - y);
  };
  const p = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

  it("B's spinners on every core, fork loop, memory hog and disk filler stay in B's sandbox: A's start is READY in about the time it takes alone", async () => {
    const alone = [await startAlone(), await startAlone()];
    const eventsAlone = await eventLatencies(30);
    const b = await t.newUser();
    const created = await t.request('POST', '/api/v1/sandboxes', { key: b.key, body: {} });
    const sandbox = await waitForStatus(t, b.key, created.body.id, 'RUNNING', 60_000);
    const bash = async (command: string) =>
      runtimeClient((await t.stores.sandboxes.get(sandbox.id))!, t.box).bash(command, { cwd: '.', timeoutS: 30 });
    const cores = os.availableParallelism();
    // Every load at once, left running: spinners (two per core), a fork loop, a memory hog past 512 MiB.
    const load = [
      ...Array.from({ length: cores * 2 }, () => 'nohup sh -c "while :; do :; done" >/dev/null 2>&1 &'),
      'nohup sh -c "while :; do sleep 60 & done" >/dev/null 2>&1 &',
      'nohup sh -c "head -c 2000000000 /dev/zero | tail" >/dev/null 2>&1 &',
      'nohup sh -c "head -c 2000000000 /dev/zero > fill" >/dev/null 2>&1 &',
    ].join(' ');
    expect((await bash(load)).exit_code).toBe(0);
    const handle = (await t.stores.sandboxes.get(sandbox.id))!.runtime as { dir: string; pid: number };
    const id = path.basename(handle.dir);
    const testCgroups = new SandboxCgroups(layout, TEST_CGROUP_PARENT);
    await eventually(() => expect(testCgroups.oomKills(id)).toBeGreaterThanOrEqual(1), {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    await eventually(() => expect(testCgroups.members(id).length).toBeGreaterThan(200), {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    const disk = () => fs.statfsSync(handle.dir);
    await eventually(() => expect(disk().bfree).toBeLessThan(disk().blocks * 0.02), {
      timeoutMs: 30_000,
      intervalMs: 200,
    }); // B's disk is full

    const loaded = [await startAlone(), await startAlone()];
    const eventsLoaded = await eventLatencies(30);
    const cpu0 = testCgroups.cpuUsageNs(id)!;
    const t0 = process.hrtime.bigint();
    await new Promise((r) => setTimeout(r, 2000));
    const bCores = (testCgroups.cpuUsageNs(id)! - cpu0) / Number(process.hrtime.bigint() - t0);
    console.log(
      `A's start alone ${alone.join(', ')} ms; with B's load ${loaded.join(', ')} ms; A's event, POST to websocket, p50/p90/max alone ${p(eventsAlone, 0.5)}/${p(eventsAlone, 0.9)}/${eventsAlone.at(-1)} ms, with B's load ${p(eventsLoaded, 0.5)}/${p(eventsLoaded, 0.9)}/${eventsLoaded.at(-1)} ms; ` +
        `B's sandbox: ${testCgroups.members(id).length} processes, ${bCores.toFixed(2)} cores, ${testCgroups.oomKills(id)} OOM kill(s), its ${Math.round((disk().blocks * disk().bsize) / 2 ** 20)} MiB disk full`,
    );
    expect(bCores).toBeLessThan(1.15);
    expect(Math.min(...loaded)).toBeLessThan(Math.max(...alone) * 3 + 2000);
    // A's events still flow: every one arrived (each wait above is bounded), none took seconds.
    expect(eventsLoaded).toHaveLength(30);
    expect(p(eventsLoaded, 0.5)).toBeLessThan(Math.max(p(eventsAlone, 0.5) * 5, 500));
    // B's sandbox is still RUNNING, its runtime answering; delete leaves no process and no cgroup.
    expect((await bash('echo still here')).output).toBe('still here\n');
    expect((await t.request('DELETE', `/api/v1/sandboxes/${sandbox.id}`, { key: b.key })).status).toBe(200);
    await eventually(() => expect(testCgroups.members(id)).toEqual([]), { timeoutMs: 30_000, intervalMs: 200 });
    for (const d of parentDirs(layout, TEST_CGROUP_PARENT))
      await eventually(() => expect(fs.existsSync(path.join(d, id))).toBe(false), {
        timeoutMs: 10_000,
        intervalMs: 100,
      });
    await eventually(() => expect(fs.readFileSync('/proc/self/mounts', 'utf8')).not.toContain(` ${handle.dir} `), {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    expect(fs.existsSync(handle.dir)).toBe(false);
  }, 240_000);
});
