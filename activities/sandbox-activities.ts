/**
 * The sandbox workflow's side effects: provider calls and the sandbox's MongoDB record. Each takes the
 * sandbox id and reads what it needs from the record (the session key never passes through workflow
 * history). Every one is safe to retry.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { hashApiKey } from '../src/auth/api-key';
import { Conflict, NotFound } from '../src/errors';
import type { SecretBox } from '../src/auth/secret-box';
import { EventBackfill } from '../src/sandboxes/event-backfill';
import { runtimeClient } from '../src/sandboxes/runtime-clients';
import { AGENT_SERVER, SESSION_KEY_HEADER, type SandboxStatus } from '../src/schemas/sandboxes';
import { SANDBOX_ACTIVITY_FAILURES } from '../src/temporal/shared';
import type { ConversationsStore } from '../src/store/conversations-store';
import type { SandboxesStore, SandboxRecord } from '../src/store/sandboxes-store';
import type { ProviderRegistry } from './sandbox-providers';
import type { SandboxProvider } from './sandbox-providers/provider';
import { setTimeout as sleep } from 'node:timers/promises';

export interface SandboxActivityDeps {
  sandboxes: SandboxesStore;
  box: SecretBox;
  providers: ProviderRegistry;
  /** How long a started or resumed runtime has to answer /alive. */
  startTimeoutMs: number;
  /** CONTROL_PLANE_URL of the runtimes: the api as they reach it (SANDBOX_CONTROL_PLANE_URL). */
  controlPlaneUrl: string;
  /** The sandboxes' conversations, for reading back what a runtime's log has and the control plane's lacks. */
  conversations: Pick<ConversationsStore, 'inSandbox'>;
  /** This worker's host task queue (hostTaskQueue), where the process sandboxes it places are acted on. */
  hostQueue: string;
}

/** How long one read-back of a sandbox's runtime log may take (it runs beside the health checks, not in them). */
const BACKFILL_BUDGET_MS = 30_000;

/** What a health check saw. */
export interface RuntimeCheck {
  state: 'alive' | 'paused' | 'unreachable' | 'missing';
  detail: string | null;
  lastUsedAtMs: number;
}

async function answersAlive(url: string, timeoutMs: number): Promise<string | null> {
  try {
    const res = await fetch(`${url}/alive`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok ? null : `its /alive answered ${res.status}`;
  } catch (e) {
    const err = e as Error & { cause?: { code?: string } };
    return `its /alive did not answer (${err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (err.cause?.code ?? err.message)})`;
  }
}

const agentUrl = (r: SandboxRecord) => r.exposed_urls.find((u) => u.name === AGENT_SERVER)?.url;

export function createSandboxActivities(deps: SandboxActivityDeps) {
  const { sandboxes, box } = deps;
  const backfill = new EventBackfill();
  /** Sandboxes whose read-back is under way: one at a time each. */
  const readingBack = new Set<string>();

  /**
   * What the runtime's log has and the control plane's lacks, posted to the webhook as the runtime would.
   * Started by a health check and left to run beside it (the check, a local activity inside a workflow
   * task, stays quick); never fails the check; the next check starts another once this one ended.
   */
  const readBack = (
    r: SandboxRecord,
    log: { info: (m: string, a: object) => void; warn: (m: string, a: object) => void },
  ): void => {
    const client = runtimeClient(r, box);
    if (!client.eventLog || readingBack.has(r.id)) return;
    readingBack.add(r.id);
    const key = box.open(r.session_key_sealed);
    const post = async (conversationId: string, events: unknown[], timeoutMs: number) => {
      const res = await fetch(`${deps.controlPlaneUrl}/api/v1/webhooks/events/${encodeURIComponent(conversationId)}`, {
        method: 'POST',
        headers: { [SESSION_KEY_HEADER]: key, 'Content-Type': 'application/json' },
        body: JSON.stringify(events),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
      await res.body?.cancel();
      return res.status;
    };
    void backfill
      .run(client, { conversations: () => deps.conversations.inSandbox(r.id), post }, Date.now() + BACKFILL_BUDGET_MS)
      .then(
        (done) =>
          done.posted > 0 &&
          log.info('read back events a runtime had not delivered', {
            sandboxId: r.id,
            conversations: done.read,
            posted: done.posted,
          }),
      )
      .catch((e: Error) =>
        log.warn("reading back a runtime's events failed; the next check tries again", {
          sandboxId: r.id,
          error: e.message,
        }),
      )
      .finally(() => readingBack.delete(r.id));
  };

  const load = async (sandboxId: string): Promise<SandboxRecord> => {
    const r = await sandboxes.get(sandboxId);
    if (!r) throw new NotFound(`sandbox ${sandboxId} has no record`);
    return r;
  };

  /**
   * The record of a sandbox this worker may act on: one placed on another host (its processes and files
   * are there) is refused with SANDBOX_ACTIVITY_FAILURES.onAnotherHost, which the workflow reads as "ask
   * that host" (a local health check that ran here) and which no routed call ever meets.
   */
  const loadHere = async (sandboxId: string): Promise<SandboxRecord> => {
    const r = await load(sandboxId);
    if (r.host_queue && r.host_queue !== deps.hostQueue) {
      throw ApplicationFailure.nonRetryable(
        `sandbox ${sandboxId} is on the host of task queue ${r.host_queue}, not on this worker's`,
        SANDBOX_ACTIVITY_FAILURES.onAnotherHost,
      );
    }
    return r;
  };

  /** The sandbox's provider (a ProviderConfigError, a domain error, fails the activity at once). */
  const provider = (r: SandboxRecord): SandboxProvider => deps.providers(r.spec.provider);

  /** Waits, heartbeating, until the runtime answers /alive. */
  const waitAlive = async (r: SandboxRecord): Promise<void> => {
    const url = agentUrl(r);
    if (!url) throw new Error(`sandbox ${r.id} exposes no ${AGENT_SERVER} URL`);
    const deadline = Date.now() + deps.startTimeoutMs;
    let last: string | null = null;
    // A runtime comes up in a few hundred ms: poll often (a backoff would add up to its last step to
    // every start); ask the provider whether it died only now and then.
    for (let i = 0; Date.now() < deadline; i++) {
      Context.current().heartbeat();
      last = await answersAlive(url, 2000);
      if (last === null) return;
      if (r.runtime && i % 20 === 19) {
        const state = await provider(r).inspect(r.runtime);
        if (state.state === 'missing') throw new Error(`the runtime exited while starting: ${state.detail}`);
      }
      await sleep(i < 500 ? 10 : 250);
    }
    throw new Error(`the runtime at ${url} did not come up within ${deps.startTimeoutMs} ms: ${last}`);
  };

  /** Starts a runtime for the sandbox, records where it is and waits until it answers. */
  const startFresh = async (r: SandboxRecord): Promise<void> => {
    const p = provider(r);
    const started = await p.start({
      sandboxId: r.id,
      spec: r.spec,
      sessionApiKey: box.open(r.session_key_sealed),
      controlPlaneUrl: deps.controlPlaneUrl,
      progress: () => Context.current().heartbeat(),
    });
    const key = started.sessionApiKey
      ? { sealed: box.seal(started.sessionApiKey), hash: hashApiKey(started.sessionApiKey) }
      : undefined;
    const next = { ...r, runtime: started.handle, exposed_urls: started.exposedUrls };
    // Recorded while the runtime boots; the wait for /alive needs it only in memory.
    await Promise.all([sandboxes.setRuntime(r.id, started.handle, started.exposedUrls, key), waitAlive(next)]);
  };

  /** The sandbox's runtime answering: the existing one (continued if paused), or a new one when it is gone. */
  const ensureAnswering = async (r: SandboxRecord): Promise<void> => {
    const state = r.runtime ? await provider(r).inspect(r.runtime) : null;
    if (!state || state.state === 'missing') return startFresh(r);
    if (state.state === 'paused') await provider(r).resume(r.runtime!);
    await waitAlive(r);
  };

  return {
    async recordSandboxStatus(sandboxId: string, status: SandboxStatus, detail: string | null): Promise<void> {
      await sandboxes.setStatus(sandboxId, status, detail);
    },

    /**
     * Where the sandbox's runtime is acted on: a process sandbox on the host of the worker that runs this
     * (local activity, so the worker running its workflow), once; null for a sandbox any worker reaches.
     */
    async placeSandbox(sandboxId: string): Promise<string | null> {
      const r = await load(sandboxId);
      if (r.spec.provider !== 'process') return null;
      return r.host_queue ?? (await sandboxes.placeOn(sandboxId, deps.hostQueue));
    },

    /**
     * STARTING -> RUNNING: starts the runtime, waits until it answers and records RUNNING as its last
     * step (the workflow's transition, written here to spare the start a second round trip). A retry
     * after a crash finds the runtime the first attempt made.
     */
    async startSandboxRuntime(sandboxId: string): Promise<void> {
      await ensureAnswering(await loadHere(sandboxId));
      await sandboxes.setStatus(sandboxId, 'RUNNING', null);
    },

    async pauseSandboxRuntime(sandboxId: string): Promise<void> {
      const r = await loadHere(sandboxId);
      if (!r.runtime) throw new Conflict('the sandbox has no runtime to pause');
      const state = await provider(r).inspect(r.runtime);
      if (state.state === 'missing') throw new Conflict(`cannot pause: ${state.detail}`);
      if (state.state === 'running') await provider(r).pause(r.runtime);
    },

    /** PAUSED, ERROR or MISSING -> the runtime answers: continued when it still exists, started again when not. */
    async resumeSandboxRuntime(sandboxId: string): Promise<void> {
      await ensureAnswering(await loadHere(sandboxId));
      await sandboxes.touch(sandboxId);
    },

    async deleteSandboxRuntime(sandboxId: string): Promise<void> {
      const r = await loadHere(sandboxId);
      await provider(r).delete(sandboxId, r.runtime);
      await sandboxes.setRuntime(sandboxId, null, []);
    },

    /** One health check: what the provider says, then whether /alive answers; and when it was last used. */
    async checkSandboxRuntime(sandboxId: string): Promise<RuntimeCheck> {
      const r = await loadHere(sandboxId);
      const lastUsedAtMs = (await sandboxes.lastUsedAt(r)).getTime();
      if (!r.runtime) return { state: 'missing', detail: 'the sandbox has no runtime', lastUsedAtMs };
      const state = await provider(r).inspect(r.runtime);
      if (state.state === 'missing') return { state: 'missing', detail: state.detail, lastUsedAtMs };
      if (state.state === 'paused') return { state: 'paused', detail: null, lastUsedAtMs };
      const problem = await answersAlive(agentUrl(r) ?? '', 3000);
      if (problem !== null) return { state: 'unreachable', detail: `the runtime is up but ${problem}`, lastUsedAtMs };
      if (r.status === 'RUNNING') readBack(r, Context.current().log);
      return { state: 'alive', detail: null, lastUsedAtMs };
    },
  };
}

export type SandboxActivities = ReturnType<typeof createSandboxActivities>;
