/**
 * A scripted LLM: an OpenAI-compatible `POST /v1/chat/completions` on loopback that answers from a
 * script, one step per request, streaming (server-sent events) when asked to, and records every
 * request it gets. Every answer reports a deterministic `usage`: prompt_tokens is 10 per message of the
 * request, completion_tokens the length of the answer's content (a step may override or add fields, such
 * as cached tokens or a cost); a streamed answer ends with a usage chunk when the request asks for it
 * (`stream_options.include_usage`), as OpenAI's does. Tests drive the agent with it; `npm start` runs it for the labelled demo, so a new
 * user sees a whole conversation without an LLM key.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptStep {
  /** Assistant text (the thought before tool calls, or the final message). */
  content?: string;
  tool_calls?: { name: string; arguments: string | Record<string, unknown> }[];
  /** Wait this long before answering (a slow model, for interrupt tests). */
  delay_ms?: number;
  /** Answer with this HTTP status and no completion (a failing endpoint). */
  status?: number;
  prompt_token_ids?: number[];
  response_token_ids?: number[];
  /** End server-sent-event lines with CRLF, as some servers do. */
  crlf?: boolean;
  /** Leave the ids out of the tool calls, as some endpoints do. */
  omit_call_ids?: boolean;
  /** Fields merged over the computed usage (e.g. prompt_tokens_details, cost); null: report no usage at all. */
  usage?: Record<string, unknown> | null;
}

/** The usage the scripted LLM reports for a step answering `messages` messages. */
export function scriptedUsage(step: ScriptStep, messages: number): Record<string, unknown> | null {
  if (step.usage === null) return null;
  const prompt = messages * 10;
  const completion = (step.content ?? '').length;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, ...step.usage };
}

/** The parts of a chat-completions request the scripted LLM looks at; the rest is kept as sent. */
export interface CompletionRequestBody {
  model?: string;
  stream?: boolean;
  messages?: unknown[];
  tools?: unknown[];
  [field: string]: unknown;
}

export interface RecordedCompletionRequest {
  body: CompletionRequestBody;
  authorization: string | undefined;
}

export class ScriptedLlm {
  readonly requests: RecordedCompletionRequest[] = [];
  private server!: http.Server;
  private step = 0;
  url = '';

  constructor(private script: ScriptStep[]) {}

  /** Replaces the script and starts it from the top. */
  load(script: ScriptStep[]): void {
    this.script = script;
    this.step = 0;
  }

  async start(port = 0, host = '127.0.0.1'): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    // A port someone else holds is an error to report, not a start that never ends.
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.url = `http://${host}:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  close(): Promise<void> {
    return new Promise((r) => {
      this.server.close(() => r());
      this.server.closeAllConnections();
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res
        .writeHead(404, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const body = await readJsonBody(req);
    this.requests.push({ body, authorization: req.headers.authorization });
    const n = this.step++;
    const step = this.script[n] ?? { content: 'The script has no more steps.' };
    if (step.delay_ms && (await closedWithin(res, step.delay_ms))) return;
    if (step.status) {
      res
        .writeHead(step.status, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ error: { message: `scripted failure ${step.status}` } }));
      return;
    }
    const answer: ScriptedAnswer = {
      id: `chatcmpl-scripted-${n + 1}`,
      model: body.model ?? 'scripted',
      step,
      toolCalls: scriptedToolCalls(step, n),
      usage: scriptedUsage(step, Array.isArray(body.messages) ? body.messages.length : 0),
    };
    if (!body.stream) {
      writeCompletion(res, answer);
      return;
    }
    writeCompletionStream(res, answer, body.stream_options as { include_usage?: unknown } | undefined);
  }
}

async function readJsonBody(req: http.IncomingMessage): Promise<CompletionRequestBody> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as CompletionRequestBody;
}

/** Waits `ms`; true when the client went away first (an interrupted call), and nothing is to be answered. */
function closedWithin(res: http.ServerResponse, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    res.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** The answer to the request of the script's step `n` (counted from 0), before it is written. */
interface ScriptedAnswer {
  id: string;
  model: string;
  step: ScriptStep;
  toolCalls: ReturnType<typeof scriptedToolCalls>;
  usage: Record<string, unknown> | null;
}

function scriptedToolCalls(step: ScriptStep, n: number) {
  return (step.tool_calls ?? []).map((c, i) => ({
    id: step.omit_call_ids ? '' : `call_${n + 1}_${i + 1}`,
    type: 'function' as const,
    function: {
      name: c.name,
      arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
    },
  }));
}

/** The answer as one JSON chat completion. */
function writeCompletion(res: http.ServerResponse, { id, model, step, toolCalls, usage }: ScriptedAnswer): void {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(
    JSON.stringify({
      id,
      object: 'chat.completion',
      model,
      ...(step.prompt_token_ids ? { prompt_token_ids: step.prompt_token_ids } : {}),
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: step.content ?? null,
            ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
          },
          finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
          ...(step.response_token_ids ? { token_ids: step.response_token_ids } : {}),
        },
      ],
      ...(usage ? { usage } : {}),
    }),
  );
}

/** The answer as server-sent chunks: the role, the content a word at a time, each tool call, the finish, the usage. */
function writeCompletionStream(
  res: http.ServerResponse,
  { id, model, step, toolCalls, usage }: ScriptedAnswer,
  options: { include_usage?: unknown } | undefined,
): void {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  const eol = step.crlf ? '\r\n' : '\n';
  const send = (chunk: object) =>
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model, ...chunk })}${eol}${eol}`);
  // Token ids as vLLM-style servers stream them: the prompt's in the first chunk, the answer's in the last.
  send({
    ...(step.prompt_token_ids ? { prompt_token_ids: step.prompt_token_ids } : {}),
    choices: [{ index: 0, delta: { role: 'assistant' } }],
  });
  const words = (step.content ?? '').match(/\S+\s*/g) ?? [];
  for (const w of words) send({ choices: [{ index: 0, delta: { content: w } }] });
  toolCalls.forEach((c, index) =>
    send({
      choices: [{ index: 0, delta: { tool_calls: [{ index, id: c.id, type: 'function', function: c.function }] } }],
    }),
  );
  send({
    choices: [
      {
        index: 0,
        delta: {},
        finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
        ...(step.response_token_ids ? { token_ids: step.response_token_ids } : {}),
      },
    ],
  });
  if (usage && options?.include_usage === true) send({ choices: [], usage });
  res.end(`data: [DONE]${eol}${eol}`);
}
