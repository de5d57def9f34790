/**
 * The sandbox's lifecycle as a plain state machine: given its state and an event (an update request, a
 * health check's result, a provider call's outcome) it decides the next status and detail, the provider
 * call to make and the failure an update answers with. No Temporal, no I/O, no clock (time is passed
 * in): sandbox-workflow.ts runs it (sandbox-driver.ts carries out its steps), and its unit tests need
 * no server. The statuses and transitions are the ones listed in sandbox-workflow.ts's header.
 */
import type { RuntimeCheck } from '../activities/sandbox-activities';
import type {
  SandboxFailure,
  SandboxState,
  SandboxStatus,
  SandboxUpdateName,
  SandboxWorkflowSettings,
} from '../src/temporal/shared';

/** A provider call the driver makes; its outcome comes back through `provided`. */
export type ProviderAction =
  { call: 'start' } | { call: 'pause'; why: 'request' | 'idle' } | { call: 'resume' } | { call: 'delete' };

/** `hostAbsent`: the call was never taken: no worker of the sandbox's host polled for it in time. */
/**
 * How a provider call ended; `unrunnable`: the provider cannot carry it out as this worker is configured
 * (a spec it cannot run), which no retry changes.
 */
export type ProviderOutcome = { ok: true } | { ok: false; reason: string; hostAbsent?: boolean; unrunnable?: boolean };

/**
 * What the driver does next, in this order: record the change (publish it and write it to the sandbox's
 * record), then fail the update with `refuse`, or make the provider call `act`, or answer the state.
 */
export interface Step {
  /** The new status; `written`: the activity that ran already wrote it (the start records RUNNING itself). */
  change?: SandboxState & { written?: true };
  refuse?: { failure: SandboxFailure; message: string };
  act?: ProviderAction;
}

export type LifecycleSettings = Pick<SandboxWorkflowSettings, 'healthGraceMs' | 'idleTimeoutMs' | 'hostLostMs'>;

/** SANDBOX_HOST_LOST_MS's default, also for workflows started before it was passed. */
export const DEFAULT_HOST_LOST_MS = 5 * 60_000;

/** Rules a workflow's history fixes: a run recorded before a rule changed replays with the rule it ran with. */
export interface LifecycleRules {
  /**
   * A RUNNING sandbox whose runtime the provider reports gone is ERROR at that check, without the grace
   * period: nothing listens on its address any more, which a RUNNING sandbox would go on handing out
   * (with its session key) to whoever binds that port next.
   */
  goneIsErrorAtOnce: boolean;
  /** A resume the provider refused as configured (`unrunnable`) is a conflict (409), not a provider failure (502). */
  unrunnableResumeIsConflict?: boolean;
}

/** Where a run starts: a new sandbox, or where the previous run left off (continue-as-new). */
export interface LifecycleState extends SandboxState {
  /** When the runtime began to fail its health checks (ms), null while it answers. */
  failingSinceMs: number | null;
  /** Since when no worker of the sandbox's host has taken a health check (ms); null while one does. */
  hostAbsentSinceMs?: number | null;
  /** ERROR because that host was gone for SANDBOX_HOST_LOST_MS (not because its runtime failed); until a worker there takes a call. */
  hostLost?: boolean;
}

/** A duration as a person reads it in a status detail. */
export const minutes = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`);

const NOTHING: Step = {};

export class SandboxLifecycle {
  private status: SandboxStatus;
  private detail: string | null;
  private failingSinceMs: number | null;
  private hostAbsentSinceMs: number | null;
  private hostLost: boolean;

  constructor(
    private readonly sandboxId: string,
    private readonly settings: LifecycleSettings,
    from?: LifecycleState,
    private readonly rules: LifecycleRules = { goneIsErrorAtOnce: true },
  ) {
    this.status = from?.status ?? 'STARTING';
    this.detail = from?.status_detail ?? null;
    this.failingSinceMs = from?.failingSinceMs ?? null;
    this.hostAbsentSinceMs = from?.hostAbsentSinceMs ?? null;
    this.hostLost = from?.hostLost ?? false;
  }

  get state(): SandboxState {
    return { status: this.status, status_detail: this.detail };
  }

  /** What a continued run starts from. */
  get carried(): LifecycleState {
    return {
      ...this.state,
      failingSinceMs: this.failingSinceMs,
      hostAbsentSinceMs: this.hostAbsentSinceMs,
      hostLost: this.hostLost,
    };
  }

  /** Deleted is final: the workflow ends, and every update but delete is refused. */
  get deleted(): boolean {
    return this.status === 'DELETED';
  }

  /** STARTING: the provider starts the runtime (a continued run is past that). */
  start(): Step {
    return this.status === 'STARTING' ? { act: { call: 'start' } } : NOTHING;
  }

  /**
   * The start as workflows before this class made it: always, even after an early update (one that came
   * before the start's turn) had resumed or deleted the sandbox. Only for replaying their histories.
   */
  startAsBefore(): Step {
    return { act: { call: 'start' } };
  }

  /** The refusal an update meets before it enters history (its validator): none but for a deleted sandbox. */
  validate(op: SandboxUpdateName): Step['refuse'] {
    if (op === 'delete' || !this.deleted) return undefined;
    return { failure: 'deleted', message: `sandbox ${this.sandboxId} was deleted` };
  }

  /** An update, once its turn comes (they run one at a time). */
  request(op: SandboxUpdateName): Step {
    if (op === 'delete') return this.deleted ? NOTHING : { act: { call: 'delete' } };
    const refused = this.validate(op);
    if (refused) return { refuse: refused };
    if (op === 'pause') {
      if (this.status === 'PAUSED') return NOTHING;
      if (this.status !== 'RUNNING') {
        const message = `sandbox ${this.sandboxId} is ${this.status}${this.detail ? ` (${this.detail})` : ''}: resume or delete it`;
        return { refuse: { failure: 'conflict', message } };
      }
      return { act: { call: 'pause', why: 'request' } };
    }
    // A runtime that is gone (MISSING, or ERROR after it died) is started again by the provider's resume.
    return this.status === 'RUNNING' ? NOTHING : { act: { call: 'resume' } };
  }

  /** The outcome of the provider call a step asked for. */
  provided(action: ProviderAction, outcome: ProviderOutcome): Step {
    const failed = outcome.ok ? null : outcome.reason;
    // A worker of the host took the call: the host is there.
    if (outcome.ok || !outcome.hostAbsent) {
      this.hostAbsentSinceMs = null;
      this.hostLost = false;
    }
    switch (action.call) {
      case 'start':
        return failed === null
          ? { change: { ...this.set('RUNNING', null), written: true } }
          : { change: this.set('ERROR', `the runtime did not start: ${failed}`) };
      case 'pause':
        if (action.why === 'idle') {
          // Still RUNNING when it failed: the next health check tries again.
          return failed === null
            ? { change: this.set('PAUSED', `paused after ${minutes(this.settings.idleTimeoutMs)} without use`) }
            : NOTHING;
        }
        return failed === null
          ? { change: this.set('PAUSED', 'paused on request') }
          : { refuse: { failure: 'providerFailed', message: `pausing failed: ${failed}` } };
      case 'resume':
        if (failed === null) {
          this.failingSinceMs = null;
          return { change: this.set('RUNNING', null) };
        }
        return {
          change: this.set('ERROR', `resuming failed: ${failed}`),
          refuse: {
            failure:
              !outcome.ok && outcome.unrunnable && this.rules.unrunnableResumeIsConflict
                ? 'conflict'
                : 'providerFailed',
            message: `resuming failed: ${failed}`,
          },
        };
      case 'delete':
        // A host whose worker does not take the call cannot remove what it holds now; the sandbox goes
        // from the service all the same, and a worker of that host removes the rest when it runs.
        if (!outcome.ok && outcome.hostAbsent) {
          return {
            change: this.set(
              'DELETED',
              `deleted on request; ${failed}, so its runtime and files there are removed when a worker of that host runs`,
            ),
          };
        }
        // The sandbox stays as it was: deleting again is the way out.
        return failed === null
          ? { change: this.set('DELETED', 'deleted on request') }
          : { refuse: { failure: 'providerFailed', message: `deleting failed: ${failed}; try again` } };
    }
  }

  /** Whether a health check is due: not while starting (the start waits for the runtime itself), never once deleted. */
  get checksHealth(): boolean {
    return this.status === 'RUNNING' || this.status === 'PAUSED' || this.status === 'ERROR';
  }

  /** What a health check saw, at `nowMs` (workflow time). */
  observed(check: RuntimeCheck, nowMs: number): Step {
    if (!this.checksHealth) return NOTHING;
    this.hostAbsentSinceMs = null;
    if (this.hostLost) {
      // Its host's worker is back: the sandbox is what the check sees.
      this.hostLost = false;
      if (check.state === 'paused') return { change: this.set('PAUSED', 'paused; its host answers again') };
      if (check.state !== 'alive')
        return {
          change: this.set(
            'ERROR',
            `its host answers again, but ${check.detail ?? 'its runtime does not'}; resume to restart the runtime, or delete the sandbox`,
          ),
        };
    }
    if (this.status === 'PAUSED') {
      // A paused runtime does not answer /alive; only one the provider lost matters.
      return check.state === 'missing'
        ? { change: this.set('MISSING', `${check.detail}; resume to start it again, or delete it`) }
        : NOTHING;
    }
    if (check.state === 'alive') {
      this.failingSinceMs = null;
      if (this.status === 'ERROR') return { change: this.set('RUNNING', null) };
      const idle = this.settings.idleTimeoutMs > 0 && nowMs - check.lastUsedAtMs >= this.settings.idleTimeoutMs;
      return idle ? { act: { call: 'pause', why: 'idle' } } : NOTHING;
    }
    if (this.status === 'ERROR') return NOTHING;
    if (check.state === 'missing' && this.rules.goneIsErrorAtOnce) {
      return { change: this.set('ERROR', `${check.detail}; resume to restart the runtime, or delete the sandbox`) };
    }
    // RUNNING and not answering: ERROR only once it has failed for the grace period (a restart, a blip).
    const problem = check.state === 'paused' ? 'the runtime was stopped outside the service' : check.detail;
    this.failingSinceMs ??= nowMs;
    const failingFor = nowMs - this.failingSinceMs;
    if (failingFor < this.settings.healthGraceMs) return NOTHING;
    return {
      change: this.set(
        'ERROR',
        `${problem} (failing for ${minutes(failingFor)}); resume to restart the runtime, or delete the sandbox`,
      ),
    };
  }

  /**
   * A health check asked at `askedMs` that no worker of the sandbox's host took in time (`detail` says
   * which host), seen at `nowMs`; the host is absent since the first such check was asked. Past
   * SANDBOX_HOST_LOST_MS without one, the sandbox is ERROR (from RUNNING, PAUSED or an ERROR of its own):
   * its runtime is out of the service's reach. Once a worker of that host takes a check again (`observed`), it is what it shows.
   */
  hostAbsent(detail: string, askedMs: number, nowMs: number): Step {
    if (!this.checksHealth || this.hostLost) return NOTHING;
    this.hostAbsentSinceMs ??= askedMs;
    const absentFor = nowMs - this.hostAbsentSinceMs;
    if (absentFor < (this.settings.hostLostMs ?? DEFAULT_HOST_LOST_MS)) return NOTHING;
    this.hostLost = true;
    return {
      change: this.set(
        'ERROR',
        `${detail} (for ${minutes(absentFor)}): start that worker again and the sandbox comes back, or delete it`,
      ),
    };
  }

  private set(status: SandboxStatus, detail: string | null): SandboxState {
    this.status = status;
    this.detail = detail;
    return this.state;
  }
}
