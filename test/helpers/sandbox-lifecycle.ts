/**
 * The sandbox lifecycle suites' machine (test/sandbox-lifecycle*.test.ts): its settings (grace period,
 * host lost bound, idle timeout), a lifecycle in a given status, provider outcomes and health checks.
 */
import type { RuntimeCheck } from '../../activities/sandbox-activities';
import type { SandboxStatus } from '../../src/temporal/shared';
import { SandboxLifecycle, type LifecycleState, type ProviderAction } from '../../workflows/sandbox-lifecycle';

export const GRACE = 60_000;
export const HOST_LOST = 120_000;
export const GONE = 'no worker of its host (task queue tq@a) takes its calls';
export const IDLE = 300_000;
export const T0 = 1_700_000_000_000;

export const ok = { ok: true } as const;
export const failed = (reason: string) => ({ ok: false, reason }) as const;
export const check = (state: RuntimeCheck['state'], detail: string | null = null, lastUsedAtMs = T0): RuntimeCheck => ({
  state,
  detail,
  lastUsedAtMs,
});

export function lifecycle(
  status?: SandboxStatus,
  more: Partial<LifecycleState> = {},
  settings: { healthGraceMs: number; idleTimeoutMs: number; hostLostMs?: number } = {
    healthGraceMs: GRACE,
    idleTimeoutMs: IDLE,
    hostLostMs: HOST_LOST,
  },
) {
  return new SandboxLifecycle(
    'sb-1',
    settings,
    status ? { status, status_detail: null, failingSinceMs: null, ...more } : undefined,
  );
}

/** Runs an action the machine asked for with the given outcome; answers the step that follows. */
export function act(
  l: SandboxLifecycle,
  action: ProviderAction | undefined,
  outcome: { ok: true } | { ok: false; reason: string; hostAbsent?: boolean },
) {
  expect(action).toBeDefined();
  return l.provided(action!, outcome);
}
