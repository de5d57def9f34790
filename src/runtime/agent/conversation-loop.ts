/**
 * A conversation's agent loop, which reads like SPEC 3.3: each step asks the LLM, records the actions it
 * proposes, waits for a confirmation when asked to, runs the PreToolUse hooks (which may block), runs the
 * tools and records what they observed, until the agent finishes, a pause takes effect between steps, an
 * interrupt cancels the step, max_iterations is reached or an unexpected failure moves the conversation
 * to ERROR. Each completion's tokens and cost add up to its metrics, recorded after every completion.
 */
import { completionEvents } from './completion-events';
import { planCondensation, SUMMARY_INSTRUCTIONS } from './condenser';
import { errorOf, type ActionEvent } from './conversation-events';
import { agentMessage, stopHookMessage } from './conversation-messages';
import { addCompletion, METRICS_STATE_KEY } from './conversation-metrics';
import { ConversationRecord } from './conversation-record';
import { unanswered } from './conversation-replay';
import { runnable, toolCallEvents } from './conversation-tool-calls';
import { complete } from './llm-client';
import type { Completion } from './llm-protocol';
import { buildView, toMessages } from './llm-view';
import { AGENT_TOOL_DEFINITIONS } from './tools';

export abstract class ConversationLoop extends ConversationRecord {
  protected loop: Promise<void> | null = null;
  protected pauseRequested = false;
  /** A message asked to run while the loop ran: the agent has not seen it if the loop is about to finish. */
  protected unseenMessage = false;
  protected stepAbort: AbortController | null = null;
  protected iterations = 0;

  protected startLoop(runPendingFirst: boolean): void {
    this.pauseRequested = false;
    if (!runPendingFirst) this.iterations = 0; // an accepted confirmation goes on counting
    this.setStatus('running');
    this.loop = this.runLoop(runPendingFirst)
      .catch((e: Error) => {
        this.deps.log('the run loop failed', { err: e.message });
        try {
          for (const a of unanswered(this.events)) this.emit(errorOf(a, `Not run: the run loop failed (${e.message})`));
          this.pending = [];
          this.emit({
            kind: 'ConversationErrorEvent',
            source: 'environment',
            code: e.name || 'Error',
            detail: e.message,
          });
          this.setStatus('error');
        } catch (again) {
          // Nothing can be recorded (a full disk): the runtime's log is all that is left.
          this.deps.log('the failure could not be recorded', { err: (again as Error).message });
        }
      })
      .finally(() => {
        this.loop = null;
        this.stepAbort = null;
      });
  }

  private async runLoop(runPendingFirst: boolean): Promise<void> {
    if (runPendingFirst) {
      const outcome = await this.execute(this.pending.splice(0));
      if (outcome !== 'continue') return this.end(outcome);
    }
    for (;;) {
      if (this.pauseRequested) return this.end('interrupted');
      if (this.iterations >= this.settings.max_iterations) {
        this.emit({
          kind: 'ConversationErrorEvent',
          source: 'environment',
          code: 'MaxIterationsReached',
          detail: `The agent stopped after ${this.iterations} iterations (max_iterations). Send a message or run the conversation to let it go on.`,
        });
        return this.setStatus('error');
      }
      const outcome = await this.step();
      if (outcome !== 'continue') return this.end(outcome);
    }
  }

  private async end(outcome: 'finished' | 'waiting' | 'interrupted'): Promise<void> {
    if (outcome === 'interrupted') return this.setStatus('paused');
    if (outcome === 'waiting') return this.setStatus('waiting_for_confirmation');
    if (this.unseenMessage) return this.runLoop(false); // a message came in after the last LLM call
    const stop = (await this.runner.hooks('Stop', { conversation_id: this.id })).find((h) => h.blocked);
    if (stop && this.iterations < this.settings.max_iterations) {
      this.emit(stopHookMessage(stop.reason));
      return this.runLoop(false);
    }
    if (this.pauseRequested) return this.setStatus('paused'); // interrupted while the Stop hooks ran
    if (this.unseenMessage) return this.runLoop(false); // it came in while the Stop hooks ran
    this.setStatus('finished');
  }

  /** One agent step: ask the LLM, record what it proposes, run it unless it must be confirmed. */
  private async step(): Promise<'continue' | 'finished' | 'waiting' | 'interrupted'> {
    if (!(await this.condenseIfNeeded())) return 'interrupted';
    this.unseenMessage = false;
    const completion = await this.askStep(toMessages(buildView(this.events)), AGENT_TOOL_DEFINITIONS);
    if (!completion) return 'interrupted';
    this.iterations++;
    if (completion.tool_calls.length === 0) {
      this.emit(agentMessage(completion));
      return 'finished';
    }
    const calls = toolCallEvents(completion);
    const actions = runnable(calls.actions.map((a) => this.emit(a) as ActionEvent));
    for (const e of calls.errors) this.emit(e);
    if (actions.length === 0) return 'continue';
    if (this.settings.confirmation_mode) {
      this.pending = actions;
      return 'waiting';
    }
    return this.execute(actions);
  }

  /** The LLM call of a step, cancelled by an interrupt (then null). */
  private async askStep(messages: ReturnType<typeof toMessages>, tools: object[]): Promise<Completion | null> {
    const llm = this.settings.agent.llm;
    const abort = (this.stepAbort = new AbortController());
    try {
      const completion = await complete(llm, messages, tools, {
        signal: abort.signal,
        keepExchange: llm.log_completions,
        onDelta: llm.stream
          ? (d) =>
              this.emitTransient({
                kind: 'StreamingDeltaEvent',
                content: d.content,
                reasoning_content: d.reasoning_content,
              })
          : undefined,
      });
      for (const e of completionEvents(llm, completion)) this.emit(e);
      this.metrics = addCompletion(this.metrics, llm.model, completion.id, completion.usage);
      this.emit({ kind: 'ConversationStateUpdateEvent', key: METRICS_STATE_KEY, value: this.metrics });
      return completion;
    } catch (e) {
      if (abort.signal.aborted) return null;
      throw e;
    } finally {
      this.stepAbort = null;
    }
  }

  /** Runs accepted actions; an interrupt cancels the one running and answers the others. */
  private async execute(actions: ActionEvent[]): Promise<'continue' | 'finished' | 'interrupted'> {
    const abort = (this.stepAbort = new AbortController());
    const finished = await this.runner.run(actions, abort.signal);
    this.stepAbort = null;
    if (abort.signal.aborted) return 'interrupted';
    return finished ? 'finished' : 'continue';
  }

  /** False when an interrupt cancelled the summarizing call. */
  private async condenseIfNeeded(): Promise<boolean> {
    const condenser = this.settings.agent.condenser;
    if (!condenser && !this.condenseRequested) return true;
    const plan = planCondensation(buildView(this.events), condenser ?? null, this.condenseRequested);
    if (!plan) {
      this.condenseRequested = false; // nothing to forget
      return true;
    }
    const completion = await this.askStep(
      [
        { role: 'system', content: SUMMARY_INSTRUCTIONS },
        { role: 'user', content: plan.material },
      ],
      [],
    );
    if (!completion) return false;
    const summary = completion.content ?? '';
    this.emit({
      kind: 'Condensation',
      forgotten_event_ids: plan.forgotten,
      summary,
      summary_offset: plan.summaryOffset,
      llm_response_id: completion.id,
    });
    this.emit({ kind: 'CondensationSummaryEvent', summary });
    this.condenseRequested = false;
    return true;
  }
}
