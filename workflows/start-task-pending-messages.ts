/**
 * Messages queued while the start runs (they wait in MongoDB): each pendingMessages signal says there may
 * be more; once the start has ended they are delivered, or given up when it failed.
 */
import { setHandler } from '@temporalio/workflow';
import { pendingMessagesSignal } from '../src/temporal/shared';
import { deliverPendingMessages, givePendingMessagesUp } from './start-task-activity-proxies';
import { detailOf } from './start-task-failures';
import type { StartTaskRun } from './start-task-run';

export class StartTaskPendingMessages {
  private waiting = true;

  constructor(private readonly run: StartTaskRun) {}

  /** Each signal says there may be more to deliver. */
  listen(): void {
    setHandler(pendingMessagesSignal, () => void (this.waiting = true));
  }

  /**
   * After READY: deliver the queued messages in order, again while signals say more came (a signal that
   * lands as the workflow completes makes the server refuse the completion, so none is left behind).
   * After ERROR, or a delivery that kept failing: they are marked UNDELIVERED with why.
   */
  async settle(): Promise<void> {
    const { taskId, userId, snapshots } = this.run;
    const failed = snapshots.at(-1)?.status === 'ERROR';
    while (this.waiting) {
      this.waiting = false;
      if (failed) {
        await givePendingMessagesUp({
          conversationId: taskId,
          detail: `the start failed: ${snapshots.at(-1)?.detail ?? 'no detail'}`,
        });
        continue;
      }
      try {
        await deliverPendingMessages.executeWithOptions(
          { summary: `deliver the messages queued for conversation ${taskId}` },
          [{ userId, conversationId: taskId }],
        );
      } catch (e) {
        await givePendingMessagesUp({ conversationId: taskId, detail: `delivery failed: ${detailOf(e)}` });
      }
    }
  }
}
