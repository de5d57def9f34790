/**
 * What the five host processors share (git hosts A, B and C, issue trackers A and B, chat): when the
 * agent has finished, a summary of its work is posted once to where the conversation came from. As
 * published, `should_request_summary` false posts nothing, and the summary is the agent's own answer to
 * a summary request (its server's `ask_agent`), else what it said last. A post made once is never made
 * again: its round is recorded, and the post carries a marker that a retry (after a worker died between
 * the post and its record) looks for first. A host that refuses (4xx) fails the round for good; one that
 * is away or overloaded (5xx, 429, no answer) is retried a bounded number of times by the workflow.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Event } from '../../src/schemas/events';
import type { AppConversationRecord } from '../../src/store/app-conversations-store';
import { callHost, type HostAnswer } from './host-call';
import { nextLinkOf } from '../../src/git/link-header';
import { textOf, type CallbackProcessorDeps, type CallbackRun } from './processor';

/** The action a round records once its post is made (or found made). */
export const SUMMARY_POSTED = 'comment-posted';

/** Asked of the agent when the processor requests a summary. */
export const SUMMARY_INSTRUCTION =
  'Please summarize your work on this task for the people who asked for it: what you changed, where, and anything they should check or do next. Answer with the summary only.';

/** What the agent said it did: its finish message, else its last message. */
export function summaryOf(events: readonly Event[]): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    const message = e.kind === 'ActionEvent' && e.action?.kind === 'FinishAction' ? e.action.message : undefined;
    if (typeof message === 'string') return message;
    if (e.kind === 'MessageEvent' && e.source === 'agent') return textOf(e.llm_message.content);
  }
  return null;
}

export const isFinished = (events: readonly Event[]): boolean =>
  events.some(
    (e) => e.kind === 'ConversationStateUpdateEvent' && e.key === 'execution_status' && e.value === 'finished',
  );

/** The text posted: the summary, or a plain line when there is none. */
export const summaryText = (summary: string | null): string =>
  summary ? `The agent finished:\n\n${summary}` : 'The agent finished.';

/** Where one processor posts, in its host's own API: the host files implement it. */
export interface SummaryTarget {
  /** Names the place posted to in records and failures (never a credential). */
  readonly name: string;
  /** Whether this conversation's summary is there already. */
  posted(conversationId: string): Promise<boolean>;
  /** Posts the text, marked as this conversation's. */
  post(text: string, conversationId: string): Promise<void>;
}

/**
 * A host's answer that is not a success: refused for good (a redirect, which is not followed, or a 4xx
 * but 408 and 429), else retried. Whatever of `secrets` the host echoed back is masked: the text goes
 * into the round's record and the workflow's history.
 */
export function hostFailure(
  host: string,
  what: string,
  status: number,
  answer: string,
  secrets: readonly string[] = [],
): Error {
  let said = answer;
  for (const s of secrets)
    if (s)
      for (const form of [s, JSON.stringify(s).slice(1, -1), encodeURIComponent(s)])
        said = said.split(form).join('***');
  said = said.slice(0, 300);
  if (status >= 300 && status < 500 && status !== 408 && status !== 429)
    return ApplicationFailure.nonRetryable(`${host} refused ${what} (${status}): ${said}`);
  return new Error(`${host} answered ${status} for ${what}: ${said}`);
}

/** The most pages of a listing read to look for a post (a busy thread is read this far, newest pages first where the host sorts). */
export const MAX_LISTING_PAGES = 10;

/** A target over a host's REST API: a listing of the place's posts to look for ours, and a post. */
export function restTarget(o: {
  host: string;
  name: string;
  headers: Record<string, string>;
  listUrl: string;
  /** The listing's next page, when the host pages it this way (null: none, or the host sorts newest first). */
  nextPage?: (answer: HostAnswer, url: string) => string | null;
  postUrl: string;
  postBody: (text: string, conversationId: string) => unknown;
  /** Whether the listing holds this conversation's post. */
  holds: (listed: unknown, conversationId: string) => boolean;
  /** A 2xx answer that still says it failed (the chat service's `ok: false`): the failure, else null. */
  failureIn?: (answer: HostAnswer) => Error | null;
  /** The credentials sent: masked in anything the host says back. */
  secrets: string[];
  signal?: AbortSignal;
}): SummaryTarget {
  const check = (a: HostAnswer, what: string) => {
    if (a.status < 200 || a.status >= 300) throw hostFailure(o.host, what, a.status, a.text, o.secrets);
    const failed = o.failureIn?.(a);
    if (failed) throw failed;
  };
  return {
    name: o.name,
    async posted(conversationId) {
      let url: string | null = o.listUrl;
      for (let page = 0; url && page < MAX_LISTING_PAGES; page++) {
        const a = await callHost(o.host, url, { method: 'GET', headers: o.headers, signal: o.signal });
        check(a, `the listing of ${o.name}`);
        if (o.holds(a.json(), conversationId)) return true;
        const next: string | null = o.nextPage?.(a, url) ?? null;
        // The credential goes with a next page only where the first one went.
        url = next && URL.canParse(next) && new URL(next).origin === new URL(o.listUrl).origin ? next : null;
      }
      return false;
    },
    async post(text, conversationId) {
      const a = await callHost(o.host, o.postUrl, {
        method: 'POST',
        headers: o.headers,
        body: o.postBody(text, conversationId),
        signal: o.signal,
      });
      check(a, `the summary on ${o.name}`);
    },
  };
}

/** The `rel="next"` URL of a Link header (git host A's paging). */
export const linkNext = (a: HostAnswer): string | null => nextLinkOf(a.link);

/** The first of `keys` in `view` that is a non-empty string or a number, as text. */
export function viewField(view: Record<string, unknown>, ...keys: string[]): string | undefined {
  for (const k of keys) {
    const v = view[k];
    if ((typeof v === 'string' && v.trim() !== '') || (typeof v === 'number' && Number.isFinite(v)))
      return String(v).trim();
  }
  return undefined;
}

/** The marker a post carries in its text, where the host keeps no metadata (git hosts): an HTML comment. */
export const commentMarker = (conversationId: string) => `<!-- agent-control:conversation=${conversationId} -->`;

/** Whether any of `bodies` carries the marker. */
export const anyMarked = (
  bodies: unknown,
  conversationId: string,
  field: (item: Record<string, unknown>) => unknown,
): boolean =>
  Array.isArray(bodies) &&
  bodies.some(
    (b) =>
      typeof b === 'object' &&
      b !== null &&
      String(field(b as Record<string, unknown>) ?? '').includes(commentMarker(conversationId)),
  );

/** A processor's fields or the start that cannot name a target: a failure no retry mends. */
export const targetMissing = (why: string): Error => ApplicationFailure.nonRetryable(why);

/** The longest summary posted (every host takes this much: issue tracker comments stop near 32,767). */
export const MAX_SUMMARY_CHARS = 30_000;

/**
 * What is posted of what the agent said: every value of the user's secrets (stored, provider tokens,
 * the start's own: the agent's commands had them) masked, and cut to MAX_SUMMARY_CHARS.
 */
export function postable(summary: string | null, secretValues: readonly string[]): string | null {
  if (summary === null) return null;
  let text = summary;
  for (const v of [...secretValues].sort((x, y) => y.length - x.length))
    if (v.length >= 4) text = text.split(v).join('***');
  return text.length > MAX_SUMMARY_CHARS
    ? `${text.slice(0, MAX_SUMMARY_CHARS)}\n\n(cut at ${MAX_SUMMARY_CHARS} characters)`
    : text;
}

/**
 * One round of a host processor: nothing before the agent finished, nothing once posted, nothing when
 * the processor asks for no summary or was stored bare (by a version that did nothing with its kind);
 * else the summary posted once. `target` is built only when there is something to post (it reads the
 * stored credential). The post is looked for on the host right before it is made, and not made when
 * Temporal has given this attempt up meanwhile (another may be under way).
 */
export async function postSummaryOnce(
  run: CallbackRun,
  deps: CallbackProcessorDeps,
  target: () => Promise<SummaryTarget>,
): Promise<string[]> {
  const { conversationId, index, processor, events } = run;
  if (!isFinished(events) || processor.should_request_summary === false || Object.keys(processor).length === 1)
    return [];
  if (await deps.callbacks.done(conversationId, index, SUMMARY_POSTED)) return [];
  const where = await target();
  // Asked once a conversation: a round tried again (the host failed) posts what the agent said the first time.
  let summary = await deps.callbacks.keptSummary(conversationId);
  if (summary === undefined)
    summary = await deps.callbacks.keepSummary(
      conversationId,
      postable(await requestSummary(run, deps), await secretValuesOf(run.app, deps)),
    );
  givenUp(run);
  if (await where.posted(conversationId)) return [SUMMARY_POSTED];
  givenUp(run);
  await where.post(summaryText(summary), conversationId);
  return [SUMMARY_POSTED];
}

/** Throws when Temporal gave this attempt up (timed out or cancelled): a later one does the post. */
function givenUp(run: CallbackRun): void {
  if (run.signal?.aborted) throw new Error('this attempt was given up by Temporal; a later one posts');
}

/**
 * The agent's answer to the summary request, through its server; when the server does not answer it
 * (gone, paused, an agent that has no such route), what the agent said last in the log.
 */
async function requestSummary(run: CallbackRun, deps: CallbackProcessorDeps): Promise<string | null> {
  const asked = await deps.agents.askAgent(run.app, SUMMARY_INSTRUCTION).catch((e: unknown) => {
    run.log.warn('the agent did not answer the summary request; its last message is posted', {
      conversation_id: run.conversationId,
      error: (e as Error).message,
    });
    return null;
  });
  if (asked) return asked;
  // The latest events, newest first: what the agent said last is among them.
  const latest = await deps.events.search({ conversationId: run.conversationId }, { descending: true, limit: 100 });
  return summaryOf(latest.jsons.map((j) => JSON.parse(j) as Event).reverse());
}

/** The secrets a start was given (sealed in its record), for processors whose credentials came with it. */
export async function startSecrets(
  app: AppConversationRecord,
  deps: CallbackProcessorDeps,
): Promise<Record<string, string>> {
  const sealed = app.start_task_id ? await deps.startTasks.sealedSecrets(app.start_task_id) : null;
  return sealed ? (JSON.parse(deps.box.open(sealed)) as Record<string, string>) : {};
}

/** Every secret value the agent could have seen: the user's stored ones, the start's own, the LLM key. */
async function secretValuesOf(app: AppConversationRecord, deps: CallbackProcessorDeps): Promise<string[]> {
  const settings = await deps.settings.resolve(app.created_by_user_id, await startSecrets(app, deps));
  const llmKey = (settings.agent_settings as { llm?: { api_key?: unknown } }).llm?.api_key;
  return [...Object.values(settings.secrets), ...(typeof llmKey === 'string' ? [llmKey] : [])];
}

/**
 * The user's stored secrets and provider tokens (GIT_HOST_B_TOKEN, ...), where a processor takes its
 * credential from: never the start's own secrets, which came in its request.
 */
export async function storedSecrets(
  app: AppConversationRecord,
  deps: CallbackProcessorDeps,
): Promise<Record<string, string>> {
  return (await deps.settings.resolve(app.created_by_user_id, {})).secrets;
}
