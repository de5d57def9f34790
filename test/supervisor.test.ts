/**
 * The launcher's restart policy, with trivial children (`node -e`) and short durations: restart with a
 * doubling backoff, back to the first step after a stable run, give up after N failed restarts in a
 * row, never two restarts of one child at once, and a stop during a backoff wait that restarts nothing.
 * Liveness probes are in supervisor-probes.test.ts.
 */
import path from 'node:path';
import { startChild, type Child } from '../scripts/servers/child';
import { describeExit } from '../scripts/servers/supervisor-log-text';
import { until, useSupervisors } from './helpers/supervisor';
import { setTimeout as sleep } from 'node:timers/promises';

describe('Supervisor', () => {
  const { dir, supervisor } = useSupervisors();

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
    expect(Date.now() - began).toBeLessThan(4000); // well before the 5 s backoff ends
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

  it('describes exits for the log', () => {
    expect(describeExit(1)).toBe('exit code 1');
    expect(describeExit('SIGKILL')).toBe('signal SIGKILL');
    expect(describeExit('spawn-error')).toBe('spawn-error');
  });
});
