/**
 * The sandbox lifecycle without a server: every transition of sandbox-workflow.ts's status list, the
 * health grace period (and a gone runtime, which does not wait it out), idle pause, refused operations,
 * deleted being final, and a host whose worker is gone (ERROR past SANDBOX_HOST_LOST_MS, back when it
 * answers, deletable without it).
 */
import type { RuntimeCheck } from '../activities/sandbox-activities';
import type { SandboxStatus } from '../src/temporal/shared';
import {
  DEFAULT_HOST_LOST_MS,
  minutes,
  SandboxLifecycle,
  type LifecycleState,
  type ProviderAction,
} from '../workflows/sandbox-lifecycle';

const GRACE = 60_000;
const HOST_LOST = 120_000;
const GONE = 'no worker of its host (task queue tq@a) takes its calls';
const IDLE = 300_000;
const T0 = 1_700_000_000_000;

const ok = { ok: true } as const;
const failed = (reason: string) => ({ ok: false, reason }) as const;
const check = (state: RuntimeCheck['state'], detail: string | null = null, lastUsedAtMs = T0): RuntimeCheck => ({
  state,
  detail,
  lastUsedAtMs,
});

function lifecycle(
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
function act(
  l: SandboxLifecycle,
  action: ProviderAction | undefined,
  outcome: { ok: true } | { ok: false; reason: string; hostAbsent?: boolean },
) {
  expect(action).toBeDefined();
  return l.provided(action!, outcome);
}

describe('sandbox lifecycle', () => {
  test('STARTING -> RUNNING: the provider starts the runtime, whose activity already wrote RUNNING', () => {
    const l = lifecycle();
    expect(l.state).toEqual({ status: 'STARTING', status_detail: null });
    expect(l.checksHealth).toBe(false);
    const step = l.start();
    expect(step).toEqual({ act: { call: 'start' } });
    expect(act(l, step.act, ok)).toEqual({ change: { status: 'RUNNING', status_detail: null, written: true } });
    expect(l.state.status).toBe('RUNNING');
  });

  test('STARTING -> ERROR: the detail says why the runtime did not start', () => {
    const l = lifecycle();
    const step = act(l, l.start().act, failed('image not found'));
    expect(step).toEqual({ change: { status: 'ERROR', status_detail: 'the runtime did not start: image not found' } });
    expect(step.refuse).toBeUndefined(); // the workflow goes on: resume or delete it
  });

  test('a continued run does not start the runtime again, and keeps where the last run was', () => {
    const l = lifecycle('PAUSED', { status_detail: 'paused on request', failingSinceMs: 5 });
    expect(l.start()).toEqual({});
    expect(l.carried).toEqual({
      status: 'PAUSED',
      status_detail: 'paused on request',
      failingSinceMs: 5,
      hostAbsentSinceMs: null,
      hostLost: false,
    });
  });

  test('RUNNING -> PAUSED on request; pausing again answers at once', () => {
    const l = lifecycle('RUNNING');
    const step = l.request('pause');
    expect(step).toEqual({ act: { call: 'pause', why: 'request' } });
    expect(act(l, step.act, ok)).toEqual({ change: { status: 'PAUSED', status_detail: 'paused on request' } });
    expect(l.request('pause')).toEqual({});
  });

  test('a pause the provider could not carry out fails the update and leaves the sandbox RUNNING', () => {
    const l = lifecycle('RUNNING');
    expect(act(l, l.request('pause').act, failed('docker is down'))).toEqual({
      refuse: { failure: 'providerFailed', message: 'pausing failed: docker is down' },
    });
    expect(l.state).toEqual({ status: 'RUNNING', status_detail: null });
  });

  test.each<SandboxStatus>(['ERROR', 'MISSING', 'STARTING'])(
    'pausing a sandbox in %s is a conflict that names its status',
    (status) => {
      const l = lifecycle(status, { status_detail: status === 'STARTING' ? null : 'it broke' });
      const step = l.request('pause');
      expect(step.act).toBeUndefined();
      expect(step.refuse?.failure).toBe('conflict');
      expect(step.refuse?.message).toBe(
        `sandbox sb-1 is ${status}${status === 'STARTING' ? '' : ' (it broke)'}: resume or delete it`,
      );
      expect(l.validate('pause')).toBeUndefined(); // the validator lets it into history: only deleted is refused there
    },
  );

  test.each<SandboxStatus>(['PAUSED', 'ERROR', 'MISSING'])('%s -> RUNNING on resume', (status) => {
    const l = lifecycle(status, { status_detail: 'before', failingSinceMs: T0 });
    const step = l.request('resume');
    expect(step).toEqual({ act: { call: 'resume' } });
    expect(act(l, step.act, ok)).toEqual({ change: { status: 'RUNNING', status_detail: null } });
    expect(l.carried.failingSinceMs).toBeNull();
  });

  test('resuming a RUNNING sandbox answers at once', () => {
    expect(lifecycle('RUNNING').request('resume')).toEqual({});
  });

  test('a resume the provider could not carry out leaves the sandbox in ERROR and fails the update', () => {
    const l = lifecycle('PAUSED');
    const step = act(l, l.request('resume').act, failed('no space left'));
    expect(step.change).toEqual({ status: 'ERROR', status_detail: 'resuming failed: no space left' });
    expect(step.refuse).toEqual({ failure: 'providerFailed', message: 'resuming failed: no space left' });
  });

  test.each<SandboxStatus>(['STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING'])(
    '%s -> DELETED on delete',
    (status) => {
      const l = lifecycle(status);
      expect(l.validate('delete')).toBeUndefined();
      const step = l.request('delete');
      expect(step).toEqual({ act: { call: 'delete' } });
      expect(act(l, step.act, ok)).toEqual({ change: { status: 'DELETED', status_detail: 'deleted on request' } });
      expect(l.deleted).toBe(true);
    },
  );

  test('a delete the provider could not carry out fails the update and changes nothing', () => {
    const l = lifecycle('PAUSED', { status_detail: 'paused on request' });
    expect(act(l, l.request('delete').act, failed('timeout'))).toEqual({
      refuse: { failure: 'providerFailed', message: 'deleting failed: timeout; try again' },
    });
    expect(l.state).toEqual({ status: 'PAUSED', status_detail: 'paused on request' });
    expect(l.deleted).toBe(false);
  });

  test('deleted is final: pause and resume are refused (also by the validator), delete answers, health is not checked', () => {
    const l = lifecycle('DELETED', { status_detail: 'deleted on request' });
    const refusal = { failure: 'deleted', message: 'sandbox sb-1 was deleted' };
    expect(l.validate('pause')).toEqual(refusal);
    expect(l.validate('resume')).toEqual(refusal);
    expect(l.request('pause')).toEqual({ refuse: refusal });
    expect(l.request('resume')).toEqual({ refuse: refusal });
    expect(l.request('delete')).toEqual({});
    expect(l.checksHealth).toBe(false);
    expect(l.observed(check('alive'), T0)).toEqual({});
    expect(l.state).toEqual({ status: 'DELETED', status_detail: 'deleted on request' });
  });

  test('RUNNING -> ERROR only once /alive has failed for the grace period', () => {
    const l = lifecycle('RUNNING');
    const down = check('unreachable', 'its /alive did not answer (ECONNREFUSED)');
    expect(l.observed(down, T0)).toEqual({});
    expect(l.carried.failingSinceMs).toBe(T0);
    expect(l.observed(down, T0 + GRACE - 1)).toEqual({});
    expect(l.carried.failingSinceMs).toBe(T0); // counted from the first failure
    expect(l.observed(down, T0 + GRACE)).toEqual({
      change: {
        status: 'ERROR',
        status_detail:
          'its /alive did not answer (ECONNREFUSED) (failing for 1 min); resume to restart the runtime, or delete the sandbox',
      },
    });
  });

  test('an answer within the grace period starts the count again', () => {
    const l = lifecycle('RUNNING');
    const down = check('unreachable', 'down');
    l.observed(down, T0);
    expect(l.observed(check('alive', null, T0 + 30_000), T0 + 30_000)).toEqual({});
    expect(l.carried.failingSinceMs).toBeNull();
    expect(l.observed(down, T0 + GRACE)).toEqual({});
    expect(l.observed(down, T0 + 2 * GRACE - 1)).toEqual({});
    expect(l.observed(down, T0 + 2 * GRACE).change?.status).toBe('ERROR');
  });

  test('the grace period goes on across a continued run', () => {
    const l = lifecycle('RUNNING', { failingSinceMs: T0 });
    expect(l.observed(check('unreachable', 'its /alive did not answer'), T0 + 90_000).change).toEqual({
      status: 'ERROR',
      status_detail:
        'its /alive did not answer (failing for 90 s); resume to restart the runtime, or delete the sandbox',
    });
  });

  test('RUNNING -> ERROR at once when the provider reports the runtime gone: its address is no longer its own', () => {
    const l = lifecycle('RUNNING');
    expect(l.observed(check('missing', 'the runtime process (pid 42) is gone'), T0)).toEqual({
      change: {
        status: 'ERROR',
        status_detail: 'the runtime process (pid 42) is gone; resume to restart the runtime, or delete the sandbox',
      },
    });
    expect(l.request('resume')).toEqual({ act: { call: 'resume' } });
  });

  test('a run recorded before that rule waits out the grace period for a gone runtime too, as it did', () => {
    const l = new SandboxLifecycle(
      'sb-1',
      { healthGraceMs: GRACE, idleTimeoutMs: IDLE },
      { status: 'RUNNING', status_detail: null, failingSinceMs: null },
      { goneIsErrorAtOnce: false },
    );
    const gone = check('missing', 'the container is gone');
    expect(l.observed(gone, T0)).toEqual({});
    expect(l.observed(gone, T0 + GRACE).change).toEqual({
      status: 'ERROR',
      status_detail: 'the container is gone (failing for 1 min); resume to restart the runtime, or delete the sandbox',
    });
  });

  test('a runtime stopped outside the service counts as failing', () => {
    const l = lifecycle('RUNNING', {}, { healthGraceMs: 0, idleTimeoutMs: 0 });
    expect(l.observed(check('paused'), T0).change?.status_detail).toBe(
      'the runtime was stopped outside the service (failing for 0 min); resume to restart the runtime, or delete the sandbox',
    );
  });

  test('ERROR -> RUNNING when the runtime answers again; still failing changes nothing', () => {
    const l = lifecycle('ERROR', { status_detail: 'down', failingSinceMs: T0 });
    expect(l.observed(check('unreachable', 'down'), T0 + 10 * GRACE)).toEqual({});
    expect(l.state.status).toBe('ERROR');
    expect(l.observed(check('alive'), T0 + 10 * GRACE)).toEqual({ change: { status: 'RUNNING', status_detail: null } });
    expect(l.carried.failingSinceMs).toBeNull();
  });

  test('PAUSED -> MISSING when the provider lost the paused runtime; nothing else a check sees matters', () => {
    const l = lifecycle('PAUSED');
    for (const state of ['paused', 'unreachable', 'alive'] as const)
      expect(l.observed(check(state, 'x'), T0 + 10 * GRACE)).toEqual({});
    expect(l.observed(check('missing', 'the container is gone'), T0)).toEqual({
      change: { status: 'MISSING', status_detail: 'the container is gone; resume to start it again, or delete it' },
    });
    expect(l.request('resume')).toEqual({ act: { call: 'resume' } });
  });

  test('RUNNING -> PAUSED after the idle timeout without use', () => {
    const l = lifecycle('RUNNING');
    expect(l.observed(check('alive', null, T0), T0 + IDLE - 1)).toEqual({});
    const step = l.observed(check('alive', null, T0), T0 + IDLE);
    expect(step).toEqual({ act: { call: 'pause', why: 'idle' } });
    expect(act(l, step.act, ok)).toEqual({
      change: { status: 'PAUSED', status_detail: 'paused after 5 min without use' },
    });
  });

  test('an idle pause that fails leaves the sandbox RUNNING for the next check, and fails nothing', () => {
    const l = lifecycle('RUNNING');
    expect(act(l, l.observed(check('alive', null, T0), T0 + IDLE).act, failed('busy'))).toEqual({});
    expect(l.state).toEqual({ status: 'RUNNING', status_detail: null });
    expect(l.observed(check('alive', null, T0), T0 + IDLE + 1).act).toEqual({ call: 'pause', why: 'idle' });
  });

  test('an idle timeout of 0 never pauses', () => {
    const l = lifecycle('RUNNING', {}, { healthGraceMs: GRACE, idleTimeoutMs: 0 });
    expect(l.observed(check('alive', null, 0), T0)).toEqual({});
  });

  describe('a host whose worker does not answer', () => {
    test('RUNNING -> ERROR once no worker of its host took a check for SANDBOX_HOST_LOST_MS, counted from the first', () => {
      const l = lifecycle('RUNNING');
      expect(l.hostAbsent(GONE, T0, T0)).toEqual({});
      expect(l.hostAbsent(GONE, T0 + HOST_LOST - 1, T0 + HOST_LOST - 1)).toEqual({});
      expect(l.carried).toMatchObject({ hostAbsentSinceMs: T0, hostLost: false });
      expect(l.hostAbsent(GONE, T0 + HOST_LOST, T0 + HOST_LOST)).toEqual({
        change: {
          status: 'ERROR',
          status_detail: `${GONE} (for 2 min): start that worker again and the sandbox comes back, or delete it`,
        },
      });
      expect(l.hostAbsent(GONE, T0 + 2 * HOST_LOST, T0 + 2 * HOST_LOST)).toEqual({}); // said once
    });

    test('absent since the first check no worker took was asked, not since it gave up', () => {
      const l = lifecycle('RUNNING');
      expect(l.hostAbsent(GONE, T0, T0 + HOST_LOST).change?.status).toBe('ERROR');
    });

    test('a check taken again starts the count anew; the count goes on across a continued run', () => {
      const l = lifecycle('RUNNING');
      l.hostAbsent(GONE, T0, T0);
      expect(l.observed(check('alive'), T0 + 1000)).toEqual({});
      expect(l.hostAbsent(GONE, T0 + HOST_LOST, T0 + HOST_LOST)).toEqual({});
      const continued = lifecycle('RUNNING', { hostAbsentSinceMs: T0 });
      expect(continued.hostAbsent(GONE, T0 + HOST_LOST, T0 + HOST_LOST).change?.status).toBe('ERROR');
    });

    test('the host back: a running runtime is RUNNING again, a paused one PAUSED', () => {
      for (const [from, seen, back] of [
        ['RUNNING', 'alive', 'RUNNING'],
        ['PAUSED', 'paused', 'PAUSED'],
      ] as const) {
        const l = lifecycle(from);
        l.hostAbsent(GONE, T0, T0);
        expect(l.hostAbsent(GONE, T0 + HOST_LOST, T0 + HOST_LOST).change?.status).toBe('ERROR');
        expect(l.observed(check(seen), T0 + HOST_LOST + 1).change?.status).toBe(back);
        expect(l.carried).toMatchObject({ hostAbsentSinceMs: null, hostLost: false });
      }
    });

    test('an ERROR of its own is kept while the host is away, and told as the host once it is lost', () => {
      const l = lifecycle('ERROR', { status_detail: 'its /alive did not answer' });
      expect(l.hostAbsent(GONE, T0, T0)).toEqual({});
      expect(l.hostAbsent(GONE, T0 + HOST_LOST, T0 + HOST_LOST).change?.status_detail).toContain(GONE);
    });

    test('a delete its host never took: DELETED, what it left there removed by a worker of that host later', () => {
      for (const status of ['RUNNING', 'PAUSED', 'MISSING', 'ERROR'] as const) {
        const l = lifecycle(status);
        const step = act(l, l.request('delete').act, { ok: false, reason: GONE, hostAbsent: true });
        expect(step).toEqual({
          change: {
            status: 'DELETED',
            status_detail: `deleted on request; ${GONE}, so its runtime and files there are removed when a worker of that host runs`,
          },
        });
        expect(l.deleted).toBe(true);
      }
      // One its host took and failed: refused, as before.
      const l = lifecycle('RUNNING');
      expect(act(l, l.request('delete').act, failed('busy')).refuse?.message).toBe('deleting failed: busy; try again');
    });

    test('a call a worker of the host took: the host is there (a later absence counts anew)', () => {
      const l = lifecycle('RUNNING');
      l.hostAbsent(GONE, T0, T0);
      expect(l.hostAbsent(GONE, T0 + HOST_LOST, T0 + HOST_LOST).change?.status).toBe('ERROR');
      expect(act(l, l.request('resume').act, ok)).toEqual({ change: { status: 'RUNNING', status_detail: null } });
      expect(l.carried).toMatchObject({ hostAbsentSinceMs: null, hostLost: false });
      const later = T0 + 10 * HOST_LOST;
      expect(l.hostAbsent(GONE, later, later)).toEqual({});
      expect(l.hostAbsent(GONE, later, later + HOST_LOST).change?.status).toBe('ERROR');
    });

    test('the host back, its runtime gone: ERROR saying so, no longer blaming the host', () => {
      const l = lifecycle('RUNNING');
      l.hostAbsent(GONE, T0, T0 + HOST_LOST);
      const step = l.observed(check('missing', 'the runtime process is gone'), T0 + 2 * HOST_LOST);
      expect(step.change).toEqual({
        status: 'ERROR',
        status_detail:
          'its host answers again, but the runtime process is gone; resume to restart the runtime, or delete the sandbox',
      });
    });

    test('a workflow started before the setting: the default bound', () => {
      const l = lifecycle('RUNNING', {}, { healthGraceMs: GRACE, idleTimeoutMs: IDLE });
      l.hostAbsent(GONE, T0, T0);
      expect(l.hostAbsent(GONE, T0 + DEFAULT_HOST_LOST_MS - 1, T0 + DEFAULT_HOST_LOST_MS - 1)).toEqual({});
      expect(l.hostAbsent(GONE, T0 + DEFAULT_HOST_LOST_MS, T0 + DEFAULT_HOST_LOST_MS).change?.status).toBe('ERROR');
    });
  });

  test('durations in details', () => {
    expect(minutes(300_000)).toBe('5 min');
    expect(minutes(90_000)).toBe('90 s');
    expect(minutes(1_400)).toBe('1 s');
  });
});
