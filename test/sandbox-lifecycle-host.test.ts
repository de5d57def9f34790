/**
 * The sandbox lifecycle without a server (workflows/sandbox-lifecycle.ts) on a host whose worker is gone:
 * ERROR past SANDBOX_HOST_LOST_MS, back when it answers, deletable without it.
 */
import { DEFAULT_HOST_LOST_MS } from '../workflows/sandbox-lifecycle';
import { act, check, failed, GONE, GRACE, HOST_LOST, IDLE, lifecycle, ok, T0 } from './helpers/sandbox-lifecycle';

describe('sandbox lifecycle', () => {
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
});
