/**
 * Callback processors (SPEC 2.4), run by the callbacks workflow on the events of a conversation:
 *   SetTitleCallbackProcessor   a title from the first user message, when the conversation has none
 *   LoggingCallbackProcessor    each event's kind and id to the worker's log
 *   GitHostAV1CallbackProcessor when the agent finishes, its summary as a comment on the pull request the
 *                               start came from, through the git host's REST API (GIT_HOST_A_API_URL)
 *   the other kinds             registered and dispatched alike; they have nothing to do here yet
 * Every run is recorded per processor and range, with its failure when the target failed; a side effect
 * done once (a comment posted) is never repeated.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { StartSettingsResolver } from '../src/orgs/start-settings';
import type { EchoedStartRequest } from '../src/schemas/app-conversations';
import type { Event } from '../src/schemas/events';
import type { AppConversationRecord, AppConversationsStore } from '../src/store/app-conversations-store';
import type { CallbacksStore } from '../src/store/callbacks-store';
import type { ConversationsStore } from '../src/store/conversations-store';
import type { EventsStore } from '../src/store/events-store';
import type { StartTasksStore } from '../src/store/start-tasks-store';
import type { SecretBox } from '../src/auth/secret-box';
import type { CallbackRange } from '../src/temporal/shared';

export interface CallbackActivityDeps {
  appConversations: AppConversationsStore;
  conversations: ConversationsStore;
  events: EventsStore;
  callbacks: CallbacksStore;
  startTasks: StartTasksStore;
  settings: StartSettingsResolver;
  box: SecretBox;
  /** REST API of git host A (GIT_HOST_A_API_URL). */
  gitHostAApiUrl: string;
}

const TITLE_CHARS = 80;
const COMMENT_POSTED = 'comment-posted';

const textOf = (content: unknown): string =>
  Array.isArray(content) ? content.map((c: { text?: string }) => c.text ?? '').join('\n') : '';

/** What the agent said it did: its finish message, else its last message. */
function summaryOf(events: Event[]): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    const message = e.kind === 'ActionEvent' && e.action?.kind === 'FinishAction' ? e.action.message : undefined;
    if (typeof message === 'string') return message;
    if (e.kind === 'MessageEvent' && e.source === 'agent') return textOf(e.llm_message.content);
  }
  return null;
}

export function createCallbackActivities(deps: CallbackActivityDeps) {
  const { appConversations, callbacks } = deps;

  /** The pull request a GitHostAV1 processor comments on: its view data, else the start's repository and pr_number. */
  const pullRequestOf = async (app: AppConversationRecord, view: Record<string, unknown>) => {
    const request = app.start_task_id ? ((await deps.startTasks.get(app.start_task_id))?.request as EchoedStartRequest | undefined) : undefined;
    const repo = (view.repo as string | undefined) ?? (view.full_name as string | undefined) ?? app.selected_repository ?? undefined;
    const number = (view.pr_number as number | undefined) ?? (view.number as number | undefined) ?? request?.pr_number?.[0];
    if (!repo || !/^[^/\s]+\/[^/\s]+$/.test(repo) || number === undefined) return null;
    return { repo, number };
  };

  const postSummary = async (conversationId: string, app: AppConversationRecord, processor: Record<string, unknown>, events: Event[]): Promise<string[]> => {
    const finished = events.some((e) => e.kind === 'ConversationStateUpdateEvent' && e.key === 'execution_status' && e.value === 'finished');
    if (!finished) return [];
    const index = app.processors.indexOf(processor);
    if (await callbacks.done(conversationId, index, COMMENT_POSTED)) return [];
    const target = await pullRequestOf(app, (processor.git_host_a_view_data as Record<string, unknown> | undefined) ?? {});
    if (!target) throw ApplicationFailure.nonRetryable('no pull request to comment on: the start has no owner/repo selected_repository and pr_number, nor does git_host_a_view_data name one');
    const all = (await deps.events.range(conversationId, 0, 100_000)).map((r) => JSON.parse(r.json) as Event);
    const summary = processor.should_request_summary === false ? null : summaryOf(all);
    // A marker in the comment: a retry after a crash between the post and its record finds the comment posted.
    const marker = `<!-- agent-control:conversation=${conversationId} -->`;
    const body = `${summary ? `The agent finished:\n\n${summary}` : 'The agent finished.'}\n\n${marker}`;
    const { secrets } = await deps.settings.resolve(app.created_by_user_id, await openRequestSecrets(app));
    const token = secrets.GIT_HOST_A_TOKEN ?? secrets.GIT_TOKEN;
    const url = `${deps.gitHostAApiUrl}/repos/${target.repo}/issues/${target.number}/comments`;
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) };
    const listed = await fetch(`${url}?per_page=100`, { headers, signal: AbortSignal.timeout(30_000) });
    if (listed.ok) {
      const comments = (await listed.json()) as { body?: string }[];
      if (Array.isArray(comments) && comments.some((c) => c.body?.includes(marker))) return [COMMENT_POSTED];
    } else await listed.body?.cancel();
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ body }), signal: AbortSignal.timeout(30_000) });
    const answer = (await res.text()).slice(0, 300);
    if (res.status === 401 || res.status === 403 || res.status === 404 || res.status === 422) {
      throw ApplicationFailure.nonRetryable(`the git host refused the comment on ${target.repo}#${target.number} (${res.status}): ${answer}`);
    }
    if (!res.ok) throw new Error(`the git host answered ${res.status} for the comment on ${target.repo}#${target.number}: ${answer}`);
    return [COMMENT_POSTED];
  };

  const openRequestSecrets = async (app: AppConversationRecord): Promise<Record<string, string>> => {
    const sealed = app.start_task_id ? await deps.startTasks.sealedSecrets(app.start_task_id) : null;
    return sealed ? (JSON.parse(deps.box.open(sealed)) as Record<string, string>) : {};
  };

  return {
    /** The events not processed yet, and how many processors the conversation has. */
    async callbackRange(conversationId: string): Promise<CallbackRange> {
      const [app, fromSeq, toSeq] = await Promise.all([appConversations.get(conversationId), callbacks.processedSeq(conversationId), deps.conversations.lastSeq(conversationId)]);
      return { fromSeq, toSeq, processors: app?.processors.length ?? 0 };
    },

    async markCallbacksProcessed(conversationId: string, seq: number): Promise<void> {
      await callbacks.markProcessed(conversationId, seq);
    },

    /** Runs processor `index` on the events with fromSeq < seq <= toSeq; records what it did or why it failed. */
    async runCallback(conversationId: string, index: number, fromSeq: number, toSeq: number): Promise<void> {
      const app = await appConversations.get(conversationId);
      const processor = app?.processors[index];
      if (!app || !processor) return;
      const kind = String(processor.kind);
      const base = { conversation_id: conversationId, processor_index: index, kind, from_seq: fromSeq, to_seq: toSeq };
      const attempt = Context.current().info.attempt;
      try {
        const events = (await deps.events.range(conversationId, fromSeq, 100_000, toSeq)).map((r) => JSON.parse(r.json) as Event);
        let actions: string[] = [];
        if (kind === 'SetTitleCallbackProcessor' && !app.title) {
          const first = events.find((e): e is Extract<Event, { kind: 'MessageEvent' }> => e.kind === 'MessageEvent' && e.source === 'user');
          const text = first ? textOf(first.llm_message.content).trim().split('\n')[0]!.replace(/^\[[^\]]*\]\s*/, '') : '';
          if (text) {
            await appConversations.setTitle(conversationId, text.length > TITLE_CHARS ? `${text.slice(0, TITLE_CHARS - 1)}…` : text);
            actions = ['title-set'];
          }
        } else if (kind === 'LoggingCallbackProcessor') {
          for (const e of events) Context.current().log.info('conversation event', { conversation_id: conversationId, kind: e.kind, id: e.id });
          actions = events.length > 0 ? [`logged ${events.length}`] : [];
        } else if (kind === 'GitHostAV1CallbackProcessor') {
          actions = await postSummary(conversationId, app, processor, events);
        }
        // Only what was done is kept (a round that asked for nothing leaves no record: no unbounded growth).
        if (actions.length > 0) await callbacks.record({ ...base, status: 'ok', actions, detail: null, attempts: attempt });
      } catch (e) {
        await callbacks.record({ ...base, status: 'failed', actions: [], detail: (e as Error).message, attempts: attempt });
        throw e;
      }
    },
  };
}
