/**
 * The start-task workflow (`start-task-<task id>`): one start of an app conversation, status by status
 * as SPEC 3.1 lists them. Every status is reported, also when its step has nothing to do, so a client
 * sees the same sequence every time; each snapshot is written to MongoDB and kept for the query.
 *
 *   WORKING -> WAITING_FOR_SANDBOX -> PREPARING_REPOSITORY -> RUNNING_SETUP_SCRIPT -> SETTING_UP_GIT_HOOKS
 *   -> SETTING_UP_SKILLS -> STARTING_CONVERSATION -> READY        (or ERROR, with a detail to act on)
 *
 * A start that fails after creating a sandbox for itself deletes it before it reports ERROR. The steps
 * are in start-task-steps.ts, the status list in start-task-run.ts, the lines in start-task-lines.ts.
 * Histories are replayed: the order of the activity calls, timers, signals and patches is fixed.
 */
import { allHandlersFinished, condition, patched } from '@temporalio/workflow';
import type { StartTaskSnapshot, StartTaskWorkflowInput } from '../src/temporal/shared';
import { detailOf } from './start-task-failures';
import { StartTaskLines } from './start-task-lines';
import { PENDING_MESSAGES } from './start-task-patches';
import { StartTaskPendingMessages } from './start-task-pending-messages';
import { StartTaskRun } from './start-task-run';
import { StartTaskSteps } from './start-task-steps';

export async function startTaskWorkflow(input: StartTaskWorkflowInput): Promise<StartTaskSnapshot[]> {
  const run = new StartTaskRun(input);
  const lines = new StartTaskLines(run);
  const steps = new StartTaskSteps(run, lines);
  const pendingMessages = new StartTaskPendingMessages(run);
  run.serveStatusList();
  pendingMessages.listen();
  run.makeSearchable();

  try {
    await run.report('WORKING');
    await run.report('WAITING_FOR_SANDBOX');
    const sandboxId = await steps.getRunningSandbox();
    await run.report('PREPARING_REPOSITORY');
    const workingDir = await steps.makeWorkspace(sandboxId);
    await run.report('RUNNING_SETUP_SCRIPT');
    await steps.runRepositorySetup(sandboxId, workingDir);
    await run.report('SETTING_UP_GIT_HOOKS');
    await steps.installGitHooks(sandboxId, workingDir);
    await run.report('SETTING_UP_SKILLS');
    const skills = await steps.gatherSkills(sandboxId, workingDir);
    await run.report('STARTING_CONVERSATION');
    run.made.app_conversation_id = await steps.startAgent(sandboxId, workingDir, skills);
    await run.report('READY');
  } catch (e) {
    const detail = await steps.deleteOwnSandbox(detailOf(e));
    await run.report('ERROR', detail);
  }
  run.end();
  // Its places in line go to the next starts (a line also finds an ended start by its record).
  // (Sent beside the delivery of queued messages, not before it: that waits for no round trip.)
  const left = lines.leave();
  if (patched(PENDING_MESSAGES)) await pendingMessages.settle();
  await left;
  // Every waiting reader has its answer (the status list ended) before the workflow closes.
  await condition(allHandlersFinished);
  return run.snapshots;
}
