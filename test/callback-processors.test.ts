/** Callback processors without servers: the registry against the schema, and the pure parts of each kind. */
import type { Logger } from '@temporalio/common';
import { CALLBACK_PROCESSORS, processorFor, type CallbackProcessorDeps, type CallbackRun } from '../activities/callback-processors';
import { commentBody, commentMarker, isFinished, pullRequestTarget, summaryOf } from '../activities/callback-processors/git-host-a-v1-processor';
import { titleFrom } from '../activities/callback-processors/set-title-processor';
import { CALLBACK_PROCESSOR_KINDS, CallbackProcessorSchema } from '../src/schemas/app-conversations';
import { EventSchema, type Event, type EventKind } from '../src/schemas/events';
import type { AppConversationRecord } from '../src/store/app-conversations-store';
import { sample } from './helpers/event-samples';

const event = (kind: EventKind, extra: Record<string, unknown> = {}): Event => EventSchema.parse(sample(kind, extra));
const message = (source: 'user' | 'agent', ...texts: string[]) =>
  event('MessageEvent', { source, llm_message: { role: source === 'user' ? 'user' : 'assistant', content: texts.map((text) => ({ type: 'text', text })) } });
const finish = (msg: string) => event('ActionEvent', { action: { kind: 'FinishAction', message: msg } });
const state = (key: string, value: unknown) => event('ConversationStateUpdateEvent', { key, value });

const app: AppConversationRecord = {
  llm_model: null,
  public: null,
  pr_number: [],
  tags: {},
  parent_conversation_id: null,
  skills: [],
  hooks: {},
  working_dir: null,
  id: 'c1',
  created_by_user_id: 'u1',
  sandbox_id: null,
  title: null,
  selected_repository: null,
  selected_branch: null,
  git_provider: null,
  trigger: null,
  agent_server_url: null,
  start_task_id: null,
  processors: [],
  created_at: new Date(0),
  updated_at: new Date(0),
};

/** A logger that keeps what it was given. */
function collectingLogger() {
  const lines: { message: string; meta?: Record<string, unknown> }[] = [];
  const keep = (message: string, meta?: Record<string, unknown>) => void lines.push({ message, meta });
  const log: Logger = { log: (_level, message, meta) => keep(message, meta), trace: keep, debug: keep, info: keep, warn: keep, error: keep };
  return { log, lines };
}

describe('the callback processor registry', () => {
  const schemaKinds = CallbackProcessorSchema.options.map((o) => o.shape.kind.value);

  it('names the same kinds as the schema', () => {
    expect([...schemaKinds].sort()).toEqual([...CALLBACK_PROCESSOR_KINDS].sort());
  });

  it.each(CALLBACK_PROCESSOR_KINDS)('has exactly one processor of kind %s, registered under its kind', (kind) => {
    expect(Object.values(CALLBACK_PROCESSORS).filter((p) => p.kind === kind)).toHaveLength(1);
    expect(CALLBACK_PROCESSORS[kind].kind).toBe(kind);
    expect(processorFor(kind)).toBe(CALLBACK_PROCESSORS[kind]);
  });

  it('registers nothing but the schema kinds', () => {
    expect(Object.keys(CALLBACK_PROCESSORS).sort()).toEqual([...schemaKinds].sort());
  });

  it.each(['NoSuchCallbackProcessor', 'constructor', 'toString', '__proto__', ''])('has no processor for %j', (kind) => {
    expect(processorFor(kind)).toBeUndefined();
  });
});

describe('processors that need nothing but their events', () => {
  // These two kinds reach no store: the deps are never read.
  const noDeps = {} as CallbackProcessorDeps;
  const run = (events: Event[], log: Logger): CallbackRun => ({ conversationId: 'c1', app, index: 0, processor: { kind: 'x' }, events, log });

  it('LoggingCallbackProcessor logs each event and says how many', async () => {
    const { log, lines } = collectingLogger();
    const events = [message('user', 'hi'), state('execution_status', 'running')];
    await expect(CALLBACK_PROCESSORS.LoggingCallbackProcessor.process(run(events, log), noDeps)).resolves.toEqual(['logged 2']);
    expect(lines).toEqual(events.map((e) => ({ message: 'conversation event', meta: { conversation_id: 'c1', kind: e.kind, id: e.id } })));
    await expect(CALLBACK_PROCESSORS.LoggingCallbackProcessor.process(run([], log), noDeps)).resolves.toEqual([]);
  });

  it.each(['GitHostBV1CallbackProcessor', 'GitHostCV1CallbackProcessor', 'IssueTrackerAV1CallbackProcessor', 'IssueTrackerBV1CallbackProcessor', 'ChatV1CallbackProcessor'] as const)(
    '%s does nothing yet',
    async (kind) => {
      const { log, lines } = collectingLogger();
      await expect(CALLBACK_PROCESSORS[kind].process(run([message('user', 'hi')], log), noDeps)).resolves.toEqual([]);
      expect(lines).toEqual([]);
    },
  );
});

describe('SetTitleCallbackProcessor: titleFrom', () => {
  it('takes the first line of the first user message', () => {
    expect(titleFrom([message('agent', 'hello'), message('user', '  Fix the build\nthen the docs'), message('user', 'later')])).toBe('Fix the build');
  });

  it('drops a leading [tag]', () => {
    expect(titleFrom([message('user', '[repo: acme/widgets] Add a test')])).toBe('Add a test');
  });

  it('cuts a long line to 80 characters with an ellipsis', () => {
    const title = titleFrom([message('user', 'x'.repeat(200))])!;
    expect(title).toHaveLength(80);
    expect(title.endsWith('…')).toBe(true);
    expect(titleFrom([message('user', 'y'.repeat(80))])).toBe('y'.repeat(80));
  });

  it('is null without a user message or with an empty one', () => {
    expect(titleFrom([])).toBeNull();
    expect(titleFrom([message('agent', 'only me')])).toBeNull();
    expect(titleFrom([message('user', '   ')])).toBeNull();
  });
});

describe('GitHostAV1CallbackProcessor: its pure parts', () => {
  it('is finished only on execution_status finished', () => {
    expect(isFinished([state('execution_status', 'running')])).toBe(false);
    expect(isFinished([state('other', 'finished')])).toBe(false);
    expect(isFinished([message('agent', 'done'), state('execution_status', 'finished')])).toBe(true);
  });

  it('summarises by the last finish message, else the last agent message', () => {
    expect(summaryOf([message('agent', 'first'), finish('did it'), message('user', 'thanks')])).toBe('did it');
    expect(summaryOf([finish('old'), message('agent', 'line 1', 'line 2')])).toBe('line 1\nline 2');
    expect(summaryOf([message('user', 'hi')])).toBeNull();
  });

  it('finds the pull request in the view data, else in the start', () => {
    expect(pullRequestTarget({ repo: 'acme/widgets', pr_number: 7 }, 'other/repo', [9])).toEqual({ repo: 'acme/widgets', number: 7 });
    expect(pullRequestTarget({ full_name: 'acme/gadgets', number: 3 }, null)).toEqual({ repo: 'acme/gadgets', number: 3 });
    expect(pullRequestTarget({}, 'acme/widgets', [9, 10])).toEqual({ repo: 'acme/widgets', number: 9 });
  });

  it('names no pull request without an owner/repo and a number', () => {
    expect(pullRequestTarget({}, 'acme/widgets', [])).toBeNull();
    expect(pullRequestTarget({ pr_number: 1 }, 'https://git.example/acme/widgets')).toBeNull();
    expect(pullRequestTarget({ pr_number: 1 }, '/local/path')).toBeNull();
    expect(pullRequestTarget({ pr_number: 1 }, null)).toBeNull();
  });

  it('ends the comment with the marker a retry looks for', () => {
    expect(commentBody('c1', 'all green')).toBe(`The agent finished:\n\nall green\n\n${commentMarker('c1')}`);
    expect(commentBody('c1', null)).toBe(`The agent finished.\n\n${commentMarker('c1')}`);
    expect(commentMarker('c1')).toBe('<!-- agent-control:conversation=c1 -->');
  });
});
