/**
 * Callback processors without servers: the registry against the schema, the kinds that need nothing but
 * their events, and SetTitle's titleFrom. The host processors' pure parts: callback-processors-host.test.ts.
 */
import type { Logger } from '@temporalio/common';
import {
  CALLBACK_PROCESSORS,
  processorFor,
  type CallbackProcessorDeps,
  type CallbackRun,
} from '../activities/callback-processors';
import { titleFrom } from '../activities/callback-processors/set-title-processor';
import { CALLBACK_PROCESSOR_KINDS, CallbackProcessorSchema } from '../src/schemas/app-conversations';
import type { Event } from '../src/schemas/events';
import type { AppConversationRecord } from '../src/store/app-conversations-store';
import { appConversationRecord } from './helpers/app-conversations';
import { message, state } from './helpers/callback-events';

const app: AppConversationRecord = {
  llm_model: null,
  launched_agent_profile: null,
  public: null,
  pr_number: [],
  tags: {},
  parent_conversation_id: null,
  skills: [],
  hooks: {},
  working_dir: null,
  ...appConversationRecord({ id: 'c1', created_by_user_id: 'u1', created_at: new Date(0), updated_at: new Date(0) }),
};

/** A logger that keeps what it was given. */
function collectingLogger() {
  const lines: { message: string; meta?: Record<string, unknown> }[] = [];
  const keep = (message: string, meta?: Record<string, unknown>) => void lines.push({ message, meta });
  const log: Logger = {
    log: (_level, message, meta) => keep(message, meta),
    trace: keep,
    debug: keep,
    info: keep,
    warn: keep,
    error: keep,
  };
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

  it.each(['NoSuchCallbackProcessor', 'constructor', 'toString', '__proto__', ''])(
    'has no processor for %j',
    (kind) => {
      expect(processorFor(kind)).toBeUndefined();
    },
  );
});

describe('processors that need nothing but their events', () => {
  // These two kinds reach no store: the deps are never read.
  const noDeps = {} as CallbackProcessorDeps;
  const run = (events: Event[], log: Logger): CallbackRun => ({
    conversationId: 'c1',
    app,
    index: 0,
    processor: { kind: 'x' },
    events,
    log,
  });

  it('LoggingCallbackProcessor logs each event and says how many', async () => {
    const { log, lines } = collectingLogger();
    const events = [message('user', 'hi'), state('execution_status', 'running')];
    await expect(CALLBACK_PROCESSORS.LoggingCallbackProcessor.process(run(events, log), noDeps)).resolves.toEqual([
      'logged 2',
    ]);
    expect(lines).toEqual(
      events.map((e) => ({ message: 'conversation event', meta: { conversation_id: 'c1', kind: e.kind, id: e.id } })),
    );
    await expect(CALLBACK_PROCESSORS.LoggingCallbackProcessor.process(run([], log), noDeps)).resolves.toEqual([]);
  });

  it.each([
    'GitHostAV1CallbackProcessor',
    'GitHostBV1CallbackProcessor',
    'GitHostCV1CallbackProcessor',
    'IssueTrackerAV1CallbackProcessor',
    'IssueTrackerBV1CallbackProcessor',
    'ChatV1CallbackProcessor',
  ] as const)(
    '%s does nothing before the agent finished, nor when asked for no summary (no store, no host reached)',
    async (kind) => {
      const { log, lines } = collectingLogger();
      const processor = (extra: object) => ({
        ...run([message('user', 'hi'), state('execution_status', 'running')], log),
        processor: { kind, ...extra },
      });
      // Not bare (a record of this version), not finished: nothing.
      await expect(
        CALLBACK_PROCESSORS[kind].process(processor({ should_request_summary: true }), noDeps),
      ).resolves.toEqual([]);
      // Finished, but stored bare by the version that did nothing with the kind: nothing.
      await expect(
        CALLBACK_PROCESSORS[kind].process(
          { ...processor({}), events: [state('execution_status', 'finished')] },
          noDeps,
        ),
      ).resolves.toEqual([]);
      const finished = {
        ...processor({ should_request_summary: false }),
        events: [state('execution_status', 'finished')],
      };
      await expect(CALLBACK_PROCESSORS[kind].process(finished, noDeps)).resolves.toEqual([]);
      expect(lines).toEqual([]);
    },
  );
});

describe('SetTitleCallbackProcessor: titleFrom', () => {
  it('takes the first line of the first user message', () => {
    expect(
      titleFrom([
        message('agent', 'hello'),
        message('user', '  Fix the build\nthen the docs'),
        message('user', 'later'),
      ]),
    ).toBe('Fix the build');
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
