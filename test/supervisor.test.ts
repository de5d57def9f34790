/**
 * The launcher's restart policy, with trivial children (`node -e`) and short durations: restart with a
 * doubling backoff, back to the first step after a stable run, give up after N failed restarts in a
 * row, never two restarts of one child at once, and a stop during a backoff wait that restarts nothing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startChild, type Child } from '../scripts/servers/child';
import { freePort } from '../src/process/net';
import { readStat } from '../src/process/process-tree';
import { Supervisor } from '../scripts/servers/supervisor';
import { describeExit } from '../scripts/servers/supervisor-log-text';
import type { SupervisorOptions } from '../scripts/servers/supervisor-options';
import { eventually } from './helpers/eventually';
import { setTimeout as sleep } from 'node:timers/promises';

const until = (check: () => boolean, timeoutMs = 10_000) => eventually(check, { timeoutMs, intervalMs: 10 });

describe('Supervisor', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'supervisor-test-'));
  const supervisors: Supervisor[] = [];
  afterAll(async () => {
    await Promise.all(supervisors.map((s) => s.stop(1000)));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A `node -e` child; `plan(n)` gives run n's script and whether it ever becomes ready (one that never
   * does fails its start when it exits). Spawn times and the most alive at once are kept.
   */
  function trivial(name: string, plan: (n: number) => { script: string; ready?: boolean }) {
    const spawns: number[] = [];
    let alive = 0;
    let maxAlive = 0;
    const start = (onSpawn: (c: Child) => void) => {
      const run = plan(spawns.length + 1);
      return startChild({
        name,
        command: process.execPath,
        args: ['-e', run.script],
        logFile: path.join(dir, `${name}.log`),
        ready: async () => run.ready ?? true,
        readyTimeoutMs: 5000,
        onSpawn: (c) => {
          spawns.push(Date.now());
          maxAlive = Math.max(maxAlive, ++alive);
          void c.exited.then(() => alive--);
          onSpawn(c);
        },
      });
    };
    return { start, spawns, maxAlive: () => maxAlive };
  }

  const serve = { script: 'setInterval(() => {}, 1000)' };
  const crashAfter = (ms: number, how = 'process.exit(3)') => ({ script: `setTimeout(() => ${how}, ${ms})` });
  const failStart = { script: 'process.exit(2)', ready: false };

  function supervisor(o: Partial<SupervisorOptions> = {}) {
    const lines: string[] = [];
    const gaveUp: string[] = [];
    const s = new Supervisor({
      initialBackoffMs: 50,
      maxBackoffMs: 400,
      stableAfterMs: 60_000,
      maxFailedRestarts: 5,
      log: { info: (m) => lines.push(m), warn: (m) => lines.push(m) },
      onGiveUp: (_name, reason) => gaveUp.push(reason),
      ...o,
    });
    supervisors.push(s);
    return { s, lines, gaveUp };
  }

  it('restarts a crashed child after a backoff that doubles while it keeps crashing, and logs why', async () => {
    const { s, lines, gaveUp } = supervisor({ maxFailedRestarts: 10 });
    const child = trivial('crashy', () => crashAfter(20));
    await s.start('crashy', child.start);
    await until(() => child.spawns.length >= 5);
    const gaps = child.spawns.slice(1).map((t, i) => t - child.spawns[i]!);
    // Each gap: node's start, 20 ms up, then 50, 100, 200, 400 ms of backoff.
    expect(gaps[0]).toBeGreaterThanOrEqual(70);
    expect(gaps[1]).toBeGreaterThanOrEqual(120);
    expect(gaps[2]).toBeGreaterThanOrEqual(220);
    expect(gaps[3]).toBeGreaterThanOrEqual(420);
    expect(gaps[3]).toBeLessThan(5000);
    expect(lines[0]).toMatch(
      /^crashy \(pid \d+\) exited unexpectedly with exit code 3 after \d+ ms up; see .*crashy\.log; restarting in 50 ms$/,
    );
    expect(lines).toContainEqual(expect.stringMatching(/^crashy restarted \(pid \d+\), ready in \d+ ms$/));
    expect(
      lines
        .filter((l) => l.includes('restarting in'))
        .map((l) => l.replace(/.*restarting in /, ''))
        .slice(0, 4),
    ).toEqual(['50 ms', '100 ms', '200 ms', '400 ms']);
    expect(s.restarts('crashy')).toBeGreaterThanOrEqual(4);
    expect(child.maxAlive()).toBe(1);
    expect(gaveUp).toEqual([]);
  });

  it('caps the backoff at maxBackoffMs', async () => {
    const { s, lines } = supervisor({ initialBackoffMs: 10, maxBackoffMs: 30, maxFailedRestarts: 10 });
    const child = trivial('capped', () => crashAfter(1));
    await s.start('capped', child.start);
    await until(() => child.spawns.length >= 5);
    expect(
      lines
        .filter((l) => l.includes('restarting in'))
        .map((l) => l.replace(/.*restarting in /, ''))
        .slice(0, 4),
    ).toEqual(['10 ms', '20 ms', '30 ms', '30 ms']);
  });

  it('goes back to the first backoff step once the child stayed up past stableAfterMs', async () => {
    const { s, lines, gaveUp } = supervisor({ stableAfterMs: 100, maxFailedRestarts: 2 });
    const child = trivial('stable', () => crashAfter(150, 'process.kill(process.pid, "SIGKILL")'));
    await s.start('stable', child.start);
    await until(() => child.spawns.length >= 5);
    // Each crash comes after a stable run: always the first step, never a give-up despite the low limit.
    const crashes = lines.filter((l) => l.includes('exited unexpectedly'));
    expect(crashes.length).toBeGreaterThanOrEqual(4);
    for (const l of crashes) expect(l).toMatch(/with signal SIGKILL after \d+ ms up; .* restarting in 50 ms$/);
    expect(gaveUp).toEqual([]);
  });

  it('gives up after maxFailedRestarts failed restarts in a row, and restarts nothing more', async () => {
    const { s, gaveUp } = supervisor({ initialBackoffMs: 10, maxFailedRestarts: 3 });
    // The first run serves a moment; no restart ever becomes ready.
    const child = trivial('broken', (n) => (n === 1 ? crashAfter(30) : failStart));
    await s.start('broken', child.start);
    await until(() => gaveUp.length > 0);
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]).toMatch(
      /^broken failed 3 restarts in a row \(last: restart of broken failed: broken exited with 2 before it was ready; its log \(.*broken\.log\)\)$/,
    );
    expect(child.spawns).toHaveLength(4);
    await sleep(300);
    expect(child.spawns).toHaveLength(4);
    expect(child.maxAlive()).toBe(1);
  });

  it('a failed restart is retried with the next backoff step, never two at once', async () => {
    const { s, lines, gaveUp } = supervisor({ initialBackoffMs: 20, maxFailedRestarts: 10 });
    const child = trivial('flaky', (n) => (n === 1 ? crashAfter(30) : n <= 3 ? failStart : serve));
    await s.start('flaky', child.start);
    await until(() => lines.some((l) => l.startsWith('flaky restarted')));
    expect(child.spawns).toHaveLength(4);
    expect(lines.filter((l) => l.includes('restarting in')).map((l) => l.replace(/.*restarting in /, ''))).toEqual([
      '20 ms',
      '40 ms',
      '80 ms',
    ]);
    expect(lines[1]).toMatch(/^restart of flaky failed: flaky exited with 2 before it was ready/);
    expect(child.maxAlive()).toBe(1);
    expect(s.restarts('flaky')).toBe(3);
    expect(gaveUp).toEqual([]);
  });

  it('stop during a backoff wait stops at once and restarts nothing', async () => {
    const { s, lines } = supervisor({ initialBackoffMs: 5000, maxBackoffMs: 30_000 });
    const steady = trivial('steady', () => serve);
    const waiting = trivial('waiting', () => crashAfter(20));
    const steadyChild = await s.start('steady', steady.start);
    await s.start('waiting', waiting.start);
    await until(() => lines.some((l) => l.includes('restarting in 5.0 s')));
    const began = Date.now();
    await s.stop(1000);
    expect(Date.now() - began).toBeLessThan(1000);
    expect(await steadyChild.exited).toBe('SIGTERM');
    await sleep(200);
    expect(waiting.spawns).toHaveLength(1);
    await expect(s.start('late', steady.start)).rejects.toThrow('late not started: stopping');
  });

  it('stop waits for a restart already under way and stops the process it spawns', async () => {
    const { s, lines } = supervisor({ initialBackoffMs: 10 });
    let restartSpawned: Child | undefined;
    const child = trivial('slow', (n) => (n === 1 ? crashAfter(20) : serve));
    await s.start('slow', async (onSpawn) => {
      if (child.spawns.length > 0) await sleep(150); // a restart that works a while before it spawns
      return child.start((c) => {
        if (child.spawns.length > 1) restartSpawned = c;
        onSpawn(c);
      });
    });
    await until(() => lines.some((l) => l.includes('restarting in')));
    await sleep(50); // the backoff is over, the restart is in its 150 ms of work
    await s.stop(1000);
    expect(restartSpawned).toBeDefined();
    expect(restartSpawned!.process.signalCode).toBe('SIGTERM');
    expect(child.maxAlive()).toBe(1);
    expect(lines.some((l) => l.startsWith('slow restarted'))).toBe(false);
  });

  /**
   * A child serving HTTP on a port of its own; its probe is a GET, or `probe` (another child's, say).
   * `before`: more of its script, run first.
   */
  async function server(name: string, probe?: () => Promise<boolean>, before = '') {
    const port = await freePort();
    const pids: number[] = [];
    const start = (onSpawn: (c: Child) => void) =>
      startChild({
        name,
        command: process.execPath,
        args: ['-e', `${before}; require('http').createServer((q, r) => r.end('ok')).listen(${port}, '127.0.0.1')`],
        logFile: path.join(dir, `${name}.log`),
        ready: async () => (await fetch(`http://127.0.0.1:${port}/`)).ok,
        alive: probe ?? (async () => (await fetch(`http://127.0.0.1:${port}/`)).ok),
        readyTimeoutMs: 5000,
        onSpawn: (c) => {
          pids.push(c.process.pid!);
          onSpawn(c);
        },
      });
    const answers = async () => (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(300) })).ok;
    return { start, pids, answers };
  }
  const probing = { probeIntervalMs: 100, probeTimeoutMs: 300 };

  it('kills and restarts a child that is alive but frozen (SIGSTOP): its probe stops answering', async () => {
    const { s, lines, gaveUp } = supervisor(probing);
    const frozen = await server('frozen');
    await s.start('frozen', frozen.start, { probeFailures: 3 });
    await sleep(500);
    expect(s.restarts('frozen')).toBe(0); // it answers its probes
    process.kill(frozen.pids[0]!, 'SIGSTOP');
    await until(() => s.restarts('frozen') === 1 && frozen.pids.length === 2);
    await until(() => readStat(frozen.pids[0]!) === null || readStat(frozen.pids[0]!)!.state === 'Z');
    await eventually(() => frozen.answers(), { timeoutMs: 5000, intervalMs: 50 });
    expect(lines).toContainEqual(
      expect.stringMatching(/^frozen \(pid \d+\) does not answer: the probe did not answer within 300 ms \(1 of 3\)$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^frozen \(pid \d+\) failed 3 liveness probes in a row: killing it/),
    );
    expect(gaveUp).toEqual([]);
  });

  it.each([
    ['outlives it (a sandbox runtime the worker started)', false],
    ['is killed with it when it asks for that (a backend of PostgreSQL)', true],
  ])('a process below a frozen child, in a process group of its own, %s', async (_what, killDescendants) => {
    const { s } = supervisor(probing);
    const pidFile = path.join(dir, `below-${killDescendants}.pid`);
    const below = `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' }).pid))`;
    const parent = await server(`parent-${killDescendants}`, undefined, below);
    await s.start(`parent-${killDescendants}`, parent.start, { probeFailures: 2, killDescendants });
    await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8') !== '');
    const grandchild = Number(fs.readFileSync(pidFile, 'utf8'));
    fs.rmSync(pidFile);
    try {
      process.kill(parent.pids[0]!, 'SIGSTOP');
      await until(() => s.restarts(`parent-${killDescendants}`) === 1);
      await until(() => readStat(parent.pids[0]!) === null || readStat(parent.pids[0]!)!.state === 'Z');
      const gone = () => readStat(grandchild) === null || readStat(grandchild)!.state === 'Z';
      if (killDescendants) await until(gone);
      else {
        await sleep(300);
        expect(gone()).toBe(false);
      }
    } finally {
      try {
        process.kill(grandchild, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });

  it("does not count a child's failed probes while a child it depends on fails its own", async () => {
    const { s, lines } = supervisor({ ...probing, maxFailedRestarts: 50 });
    const base = await server('base');
    // The dependent's probe goes through the base, as the api's /ready goes through the database.
    const dependent = await server('dependent', () => base.answers());
    await s.start('base', base.start, { probeFailures: 40 }); // slow to give up on: the dependent has every chance to miscount
    await s.start('dependent', dependent.start, { dependsOn: ['base'], probeFailures: 2 });
    process.kill(base.pids[0]!, 'SIGSTOP');
    await until(() =>
      lines.some((l) => l.startsWith('dependent does not answer') && l.includes('while base does not either')),
    );
    await sleep(1500);
    expect(s.restarts('dependent')).toBe(0);
    process.kill(base.pids[0]!, 'SIGCONT');
    await until(() => lines.includes('base answers its probe again'));
    await sleep(500);
    expect(s.restarts('dependent')).toBe(0);
    expect(s.restarts('base')).toBe(0);
  });

  it('waits for a dependency it does not run (an external server, given as a probe) the same way', async () => {
    const { s, lines } = supervisor({ ...probing, maxFailedRestarts: 50 });
    // The external server runs outside this supervisor.
    const external = await server('external');
    const running = await external.start(() => undefined);
    try {
      const dependent = await server('dependent-ext', () => external.answers());
      await s.start('dependent-ext', dependent.start, {
        dependsOn: [{ name: 'the external server', alive: () => external.answers() }],
        probeFailures: 2,
      });
      process.kill(external.pids[0]!, 'SIGSTOP');
      await until(() => lines.some((l) => l.includes('while the external server does not either')));
      await sleep(1500);
      expect(s.restarts('dependent-ext')).toBe(0);
    } finally {
      process.kill(external.pids[0]!, 'SIGCONT');
      await running.stop(1000);
    }
  });

  it('describes exits for the log', () => {
    expect(describeExit(1)).toBe('exit code 1');
    expect(describeExit('SIGKILL')).toBe('signal SIGKILL');
    expect(describeExit('spawn-error')).toBe('spawn-error');
  });
});
