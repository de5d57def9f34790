/**
 * A sandbox's runtime as its HTTP API (the agent server in the sandbox): its address from the sandbox
 * record, its session key opened with the secrets box. Every call has a deadline; a runtime that does not
 * answer is Unavailable (the api says 503 with why), never a request that hangs.
 */
import type { SecretBox } from '../auth/secret-box';
import { Unavailable, UpstreamFailed } from '../errors';
import { AGENT_SERVER, SESSION_KEY_HEADER } from '../schemas/sandboxes';
import type { SandboxRecord } from '../store/sandboxes-store';

export interface RuntimeAnswer {
  status: number;
  body: unknown;
}

export class RuntimeClient {
  protected constructor(
    readonly url: string,
    protected readonly key: string,
  ) {}

  static of(record: SandboxRecord, box: SecretBox): RuntimeClient {
    return new RuntimeClient(RuntimeClient.urlOf(record), box.open(record.session_key_sealed));
  }

  protected static urlOf(record: SandboxRecord): string {
    const url = record.exposed_urls.find((u) => u.name === AGENT_SERVER)?.url;
    if (!url) throw new Unavailable(`sandbox ${record.id} exposes no ${AGENT_SERVER} url (status ${record.status})`, 5);
    return url;
  }

  /**
   * A workspace file's text (GET /api/file/download), read up to `maxBytes`: a larger one is refused
   * (413) without reading it whole. Other answers come back as the runtime gave them.
   */
  async download(filePath: string, maxBytes: number, timeoutMs: number): Promise<RuntimeAnswer> {
    const res = await this.fetch('GET', `/api/file/download?path=${encodeURIComponent(filePath)}`, undefined, timeoutMs);
    if (res.status !== 200) return { status: res.status, body: parse(await readBounded(res, MAX_ANSWER_BYTES)) };
    const text = await readBounded(res, maxBytes);
    if (text === null) return { status: 413, body: { detail: `The file is larger than ${maxBytes} bytes; read it in the sandbox` } };
    return { status: 200, body: text };
  }

  /** Writes a file in the sandbox's working directory (POST /api/file/upload); answers the runtime's answer. */
  async upload(filePath: string, content: Uint8Array, timeoutMs: number): Promise<RuntimeAnswer> {
    const res = await this.fetch('POST', `/api/file/upload?path=${encodeURIComponent(filePath)}`, content, timeoutMs);
    return { status: res.status, body: parse(await readBounded(res, MAX_ANSWER_BYTES)) };
  }

  /** A JSON body, or bytes as they are (application/octet-stream). */
  private async fetch(method: string, path: string, body: unknown, timeoutMs: number): Promise<Response> {
    const bytes = body instanceof Uint8Array;
    try {
      return await fetch(this.url + path, {
        method,
        headers: { [SESSION_KEY_HEADER]: this.key, ...(body !== undefined ? { 'Content-Type': bytes ? 'application/octet-stream' : 'application/json' } : {}) },
        body: body === undefined ? undefined : bytes ? body : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
        // A runtime never redirects: one that does is not followed anywhere (with the session key) for a caller.
        redirect: 'error',
      });
    } catch (e) {
      const why = (e as Error).name === 'TimeoutError' ? `did not answer within ${Math.round(timeoutMs / 1000)} s` : `could not be reached (${(e as Error).message})`;
      throw new Unavailable(`The sandbox's agent server ${why}`, 5, { cause: e });
    }
  }

  /** One call; JSON in and out (text when the answer is not JSON). A runtime that cannot be reached within `timeoutMs` is Unavailable. */
  async call(method: string, path: string, body: unknown, timeoutMs: number): Promise<RuntimeAnswer> {
    const res = await this.fetch(method, path, body, timeoutMs);
    const text = await readBounded(res, MAX_ANSWER_BYTES);
    if (text === null) throw new UpstreamFailed(`The sandbox's agent server answered with more than ${MAX_ANSWER_BYTES} bytes`);
    return { status: res.status, body: parse(text) };
  }
}

/** The most of an answer a call reads (a diff of two files at the runtime's 1 MiB limit, escaped, fits). */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/**
 * The answer's text, read up to `maxBytes` (null past that: the rest is not read); a runtime that stops
 * sending it, or runs out of time, is Unavailable.
 */
async function readBounded(res: Response, maxBytes: number): Promise<string | null> {
  if (Number(res.headers.get('content-length') ?? 0) > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body ?? []) {
      size += (chunk as Uint8Array).length;
      if (size > maxBytes) return null; // leaving the loop cancels the rest of the body
      chunks.push(Buffer.from(chunk as Uint8Array));
    }
  } catch (e) {
    throw new Unavailable(`The sandbox's agent server stopped answering (${(e as Error).message})`, 5, { cause: e });
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** JSON when it is JSON; the text otherwise; null for nothing. */
function parse(text: string | null): unknown {
  if (text === null || text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
