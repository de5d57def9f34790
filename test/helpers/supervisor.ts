/**
 * The supervisor suites' supervisors (test/supervisor*.test.ts): made with short durations, all stopped
 * after the suite, their children's logs in a temporary directory removed then; and `until`, a quick
 * poll for a condition.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Supervisor } from '../../scripts/servers/supervisor';
import type { SupervisorOptions } from '../../scripts/servers/supervisor-options';
import { eventually } from './eventually';

export const until = (check: () => boolean, timeoutMs = 10_000) => eventually(check, { timeoutMs, intervalMs: 10 });

/**
 * In the describe it is called in: `dir` for the children's logs, and `supervisor(o)`, a Supervisor over
 * the test defaults with what it logs and the reasons it gave up for, stopped in the describe's afterAll.
 */
export function useSupervisors() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'supervisor-test-'));
  const supervisors: Supervisor[] = [];
  afterAll(async () => {
    await Promise.all(supervisors.map((s) => s.stop(1000)));
    fs.rmSync(dir, { recursive: true, force: true });
  });

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

  return { dir, supervisor };
}
