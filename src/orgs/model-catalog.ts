/**
 * The LLM models users may pick, from what the operator configured: a file (LLM_MODELS_FILE), or, when
 * LLM_MODELS_FROM_ENDPOINT is on, the `/models` listing of the caller's effective LLM endpoint
 * (OpenAI-style `{data: [{id}]}`), bounded in time and size and kept a minute. The model the caller's
 * settings name is always in the list, so a saved choice stays valid.
 */
import fs from 'node:fs';
import { ConfigError } from '../config';
import { ModelFileSchema, type LLMModel } from '../schemas/settings';
import { readBodyAtMost } from '../read-body';

export interface ModelCatalogOptions {
  /** A JSON array of "provider/name" strings or {provider, name, verified, hidden, canonical} objects. */
  file?: string;
  /** Ask the caller's LLM endpoint for its `/models`. */
  fromEndpoint: boolean;
  /** @default 5000 */
  endpointTimeoutMs?: number;
}

const MAX_LISTING_BYTES = 1024 * 1024;
const CACHE_MS = 60_000;
const MAX_CACHED = 100;

/** "provider/name" splits at the first slash; a bare name has no provider. */
export function modelOf(entry: string, verified = false): LLMModel {
  const i = entry.indexOf('/');
  return i > 0
    ? { provider: entry.slice(0, i), name: entry.slice(i + 1), verified, hidden: false, canonical: null }
    : { provider: null, name: entry, verified, hidden: false, canonical: null };
}

/** Reads LLM_MODELS_FILE; a file that is missing or malformed stops start-up with what is wrong. */
export function loadModelFile(file: string): LLMModel[] {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigError([`LLM_MODELS_FILE=${file} could not be read as JSON: ${(e as Error).message}`]);
  }
  const parsed = ModelFileSchema.safeParse(raw);
  if (!parsed.success)
    throw new ConfigError(
      parsed.error.issues.map((i) => `LLM_MODELS_FILE=${file}: at [${i.path.join('][')}]: ${i.message}`),
    );
  return parsed.data.map((e) =>
    typeof e === 'string'
      ? modelOf(e, true)
      : {
          provider: e.provider ?? null,
          name: e.name,
          verified: e.verified ?? true,
          hidden: e.hidden ?? false,
          canonical: e.canonical ?? null,
        },
  );
}

/** The sort key of a model, unique within a listing. */
export const modelKey = (m: LLMModel) => `${m.provider ?? ''}/${m.name}`;

export class ModelCatalog {
  private readonly fileModels: LLMModel[] | undefined;
  private readonly cache = new Map<string, { at: number; models: LLMModel[] }>();

  constructor(private readonly opts: ModelCatalogOptions) {
    this.fileModels = opts.file ? loadModelFile(opts.file) : undefined;
  }

  /** Every model for a caller whose effective LLM is `llm`, sorted by provider and name, without duplicates. */
  async models(llm: { model?: string; base_url?: string; api_key?: string } | undefined): Promise<LLMModel[]> {
    const listed = [
      ...(this.fileModels ?? []),
      ...(this.opts.fromEndpoint && llm?.base_url ? await this.fromEndpoint(llm.base_url, llm.api_key) : []),
    ];
    if (llm?.model) listed.push(modelOf(llm.model));
    const unique = new Map<string, LLMModel>();
    for (const m of listed) if (!unique.has(modelKey(m))) unique.set(modelKey(m), m);
    return [...unique.values()].sort((a, b) => (modelKey(a) < modelKey(b) ? -1 : modelKey(a) > modelKey(b) ? 1 : 0));
  }

  /** The endpoint's own listing; [] when it cannot give one (the caller still sees the file's and their own). */
  private async fromEndpoint(baseUrl: string, apiKey: string | undefined): Promise<LLMModel[]> {
    const cacheKey = `${baseUrl}\n${apiKey ?? ''}`;
    const hit = this.cache.get(cacheKey);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.models;
    let models: LLMModel[] = [];
    try {
      const url = new URL(`${baseUrl.replace(/\/+$/, '')}/models`);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return [];
      const res = await fetch(url, {
        headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {},
        signal: AbortSignal.timeout(this.opts.endpointTimeoutMs ?? 5000),
        redirect: 'error',
      });
      if (res.ok) {
        const text = await readBounded(res, MAX_LISTING_BYTES);
        const body = JSON.parse(text) as { data?: { id?: unknown }[] };
        models = (Array.isArray(body.data) ? body.data : [])
          .map((d) => d?.id)
          .filter((id): id is string => typeof id === 'string' && id.length > 0 && id.length <= 300)
          .slice(0, 10_000)
          .map((id) => modelOf(id));
      }
    } catch {
      models = [];
    }
    if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(cacheKey, { at: Date.now(), models });
    return models;
  }
}

async function readBounded(res: Response, max: number): Promise<string> {
  const text = await readBodyAtMost(res, max);
  if (text === null) throw new Error(`the model listing is larger than ${max} bytes`);
  return text;
}
