/**
 * Sandboxes run by a remote runtime API over HTTP, authenticated with an API key header:
 * `POST /start` {image, command, working_dir, environment, session_id} answers
 * {runtime_id, url, session_api_key, status}; `GET /sessions/{session_id}`; `POST /pause`, `/resume`,
 * `/stop` with {runtime_id}. The sandbox id is the session id, so a retried start finds its runtime.
 */
import { AGENT_SERVER } from '../../src/schemas/sandboxes';
import type { RemoteRuntimeHandle as RemoteHandle, RuntimeHandle } from '../../src/store/runtime-handle';
import {
  ProviderConfigError,
  wrongHandle,
  type RuntimeState,
  type SandboxProvider,
  type RuntimeStartRequest,
  type StartedRuntime,
} from './provider';

export interface RemoteProviderOptions {
  baseUrl: string;
  apiKey: string;
  requestTimeoutMs?: number;
}

interface RemoteRuntime {
  runtime_id: string;
  url: string;
  session_api_key?: string | null;
  status: string;
}

export const REMOTE_API_KEY_HEADER = 'X-API-Key';

class RemoteApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const asRemote = (h: RuntimeHandle): RemoteHandle => (h.provider === 'remote' ? h : wrongHandle('remote', h));

export class RemoteProvider implements SandboxProvider {
  readonly name = 'remote' as const;

  constructor(private readonly opts: RemoteProviderOptions) {}

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await fetch(this.opts.baseUrl.replace(/\/+$/, '') + path, {
      method,
      headers: {
        [REMOTE_API_KEY_HEADER]: this.opts.apiKey,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.opts.requestTimeoutMs ?? 60_000),
    });
    const text = await res.text();
    if (!res.ok) {
      const message = `remote runtime API ${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`;
      if (res.status === 401 || res.status === 403)
        throw new ProviderConfigError(`${message} (check REMOTE_RUNTIME_API_KEY)`);
      throw new RemoteApiError(res.status, message);
    }
    return (text ? JSON.parse(text) : {}) as T;
  }

  private async session(sandboxId: string): Promise<RemoteRuntime | null> {
    try {
      return await this.call<RemoteRuntime>('GET', `/sessions/${encodeURIComponent(sandboxId)}`);
    } catch (e) {
      if (e instanceof RemoteApiError && e.status === 404) return null;
      throw e;
    }
  }

  async start(req: RuntimeStartRequest): Promise<StartedRuntime> {
    if (!req.spec.image) throw new ProviderConfigError(`spec ${req.spec.id} has no image; a remote spec needs one`);
    let runtime = await this.session(req.sandboxId);
    if (runtime && runtime.status === 'paused') await this.call('POST', '/resume', { runtime_id: runtime.runtime_id });
    if (!runtime || runtime.status === 'stopped') {
      runtime = await this.call<RemoteRuntime>('POST', '/start', {
        image: req.spec.image,
        command: req.spec.command,
        working_dir: req.spec.working_dir,
        environment: { ...req.spec.initial_env, CONTROL_PLANE_URL: req.controlPlaneUrl },
        session_id: req.sandboxId,
        session_api_key: req.sessionApiKey,
      });
    }
    const url = new URL(runtime.url);
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const handle: RemoteHandle = {
      provider: 'remote',
      sessionId: req.sandboxId,
      runtimeId: runtime.runtime_id,
      url: runtime.url,
    };
    return {
      handle,
      exposedUrls: [{ name: AGENT_SERVER, url: runtime.url.replace(/\/+$/, ''), port }],
      ...(runtime.session_api_key ? { sessionApiKey: runtime.session_api_key } : {}),
    };
  }

  async pause(handle: RuntimeHandle): Promise<void> {
    await this.call('POST', '/pause', { runtime_id: asRemote(handle).runtimeId });
  }

  async resume(handle: RuntimeHandle): Promise<void> {
    await this.call('POST', '/resume', { runtime_id: asRemote(handle).runtimeId });
  }

  async delete(sandboxId: string, handle: RuntimeHandle | null): Promise<void> {
    const runtimeId = handle ? asRemote(handle).runtimeId : (await this.session(sandboxId))?.runtime_id;
    if (!runtimeId) return;
    try {
      await this.call('POST', '/stop', { runtime_id: runtimeId });
    } catch (e) {
      if (!(e instanceof RemoteApiError && e.status === 404)) throw e;
    }
  }

  /** The remote service runs every runtime its images hold; what it refuses, it says at the start. */
  unrunnable(): null {
    return null;
  }

  async inspect(handle: RuntimeHandle): Promise<RuntimeState> {
    const h = asRemote(handle);
    const runtime = await this.session(h.sessionId);
    if (!runtime || runtime.runtime_id !== h.runtimeId)
      return { state: 'missing', detail: `the remote runtime ${h.runtimeId} no longer exists` };
    if (runtime.status === 'paused') return { state: 'paused' };
    if (runtime.status === 'running') return { state: 'running' };
    return { state: 'missing', detail: `the remote runtime ${h.runtimeId} is ${runtime.status}` };
  }
}
