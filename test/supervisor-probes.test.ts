/**
 * The launcher's liveness probes, with children serving HTTP (`node -e`) and short durations: a child
 * alive but frozen (SIGSTOP) is killed and restarted, a process below it outlives it or not as asked,
 * and failed probes do not count while a dependency (a child of the supervisor's or an external server)
 * fails its own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startChild, type Child } from '../scripts/servers/child';
import { freePort } from '../src/process/net';
import { readStat } from '../src/process/process-tree';
import { eventually } from './helpers/eventually';
import { until, useSupervisors } from './helpers/supervisor';
import { setTimeout as sleep } from 'node:timers/promises';

describe('Supervisor', () => {
  const { dir, supervisor } = useSupervisors();

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
    // Every start of the parent starts one below it, and appends its pid: the restart's too, ended at the end.
    const below = `require('fs').appendFileSync(${JSON.stringify(pidFile)}, require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' }).pid + '\\n')`;
    const belowPids = () =>
      fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8').split('\n').filter(Boolean).map(Number) : [];
    const parent = await server(`parent-${killDescendants}`, undefined, below);
    await s.start(`parent-${killDescendants}`, parent.start, { probeFailures: 2, killDescendants });
    await until(() => belowPids().length > 0);
    const grandchild = belowPids()[0]!;
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
      // The restarted parent's own one comes a moment after the restart: waited for, briefly, then all end.
      await until(() => belowPids().length > 1).catch(() => undefined);
      for (const pid of belowPids()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
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
});
