/**
 * Counts each activity execution's outcome by activity type, on the worker's Temporal metric meter (served
 * with the SDK's own metrics at WORKER_METRICS_ADDRESS) as agent_control_activity_outcomes_total
 * {activity_type, task_queue, namespace, local, outcome: completed | failed | cancelled, failure_type}. The SDK counts failures alone;
 * this gives the denominator for a failure rate per step (docs/operations.md, "Metrics").
 */
import type { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import {
  Runtime,
  type ActivityExecuteInput,
  type ActivityInboundCallsInterceptor,
  type Next,
} from '@temporalio/worker';

export const ACTIVITY_OUTCOMES_METRIC = 'agent_control_activity_outcomes';

/** A failure's type as a bounded label: the ApplicationFailure type our activities set, else the error's class. */
const failureType = (e: unknown): string => {
  if (e instanceof ApplicationFailure && e.type) return e.type.slice(0, 64);
  if (e instanceof Error) return e.name.slice(0, 64);
  return 'unknown';
};

export class ActivityOutcomesInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    // The runtime's meter, not the activity context's: that one tags activityType and taskQueue, and the
    // SDK's own series (the ones an operator joins this with) say activity_type and task_queue.
    const { activityType, taskQueue, activityNamespace, isLocal } = this.ctx.info;
    const counter = Runtime.instance()
      .metricMeter.withTags({
        activity_type: activityType,
        task_queue: taskQueue,
        namespace: activityNamespace,
        local: String(isLocal),
      })
      .createCounter(ACTIVITY_OUTCOMES_METRIC, '1', 'Activity executions by type and outcome');
    try {
      const result = await next(input);
      counter.add(1, { outcome: 'completed', failure_type: '' });
      return result;
    } catch (e) {
      const cancelled = e instanceof CancelledFailure || this.ctx.cancellationSignal.aborted;
      counter.add(
        1,
        cancelled ? { outcome: 'cancelled', failure_type: '' } : { outcome: 'failed', failure_type: failureType(e) },
      );
      throw e;
    }
  }
}
