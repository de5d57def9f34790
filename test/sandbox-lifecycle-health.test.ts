/**
 * The sandbox lifecycle without a server (workflows/sandbox-lifecycle.ts), watched by its health checks:
 * the grace period (and a gone runtime, which does not wait it out), a runtime stopped outside the
 * service, ERROR and MISSING and back, idle pause, and the durations its details give.
 */
import { minutes, SandboxLifecycle } from '../workflows/sandbox-lifecycle';
import { act, check, failed, GRACE, IDLE, lifecycle, ok, T0 } from './helpers/sandbox-lifecycle';

describe('sandbox lifecycle', () => {
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

  test('durations in details', () => {
    expect(minutes(300_000)).toBe('5 min');
    expect(minutes(90_000)).toBe('90 s');
    expect(minutes(1_400)).toBe('1 s');
  });
});
