/**
 * The sandbox lifecycle without a server (workflows/sandbox-lifecycle.ts), on request: every transition
 * of sandbox-workflow.ts's status list a start, pause, resume or delete makes, the operations refused,
 * and deleted being final. Health checks and idle pause are in sandbox-lifecycle-health.test.ts, a host
 * whose worker is gone in sandbox-lifecycle-host.test.ts.
 */
import type { SandboxStatus } from '../src/temporal/shared';
import { act, check, failed, lifecycle, ok, T0 } from './helpers/sandbox-lifecycle';

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
});
