/**
 * The start-task workflow (`start-task-<task id>`): one start of an app conversation, status by status
 * as SPEC 3.1 lists them. Every status is reported, also when its step has nothing to do, so a client
 * sees the same sequence every time; each snapshot is written to MongoDB and kept for the query.
 *
 *   WORKING -> WAITING_FOR_SANDBOX -> PREPARING_REPOSITORY -> RUNNING_SETUP_SCRIPT -> SETTING_UP_GIT_HOOKS
 *   -> SETTING_UP_SKILLS -> STARTING_CONVERSATION -> READY        (or ERROR, with a detail to act on)
 *
 * A start that fails after creating a sandbox for itself deletes it before it reports ERROR.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  TimeoutFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  uuid4,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  START_TASK_FAILURES,
  admissionReleaseSignal,
  admissionVerdictSignal,
  pendingMessagesSignal,
  SEARCH_ATTRIBUTE_KEYS,
  shown,
  startAdmissionWorkflowId,
  startTaskSnapshotsAfterUpdate,
  startTaskSnapshotsQuery,
  type AdmissionLineKind,
  type AdmissionVerdict,
  type StartTaskSettings,
  type StartTaskSnapshot,
  type StartTaskStatus,
  type StartTaskWorkflowInput,
} from '../src/temporal/shared';
import { START_TASK_ACTIVITY_OPTIONS, withTimeout } from './activity-options';

const { recordStartTask } = proxyLocalActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.record);
// Steps that take a call or two (to the database, to the runtime) run as local activities: no round trip
// through the server each. Steps that can take minutes (a sandbox, a clone, a setup script, plugins) do not.
const { setUpGitHooks, startConversation } = proxyLocalActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.quick);
const { acquireSandbox, deleteStartSandbox } = proxyActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.step);
const { loadSkills } = proxyActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.long); // plugins are cloned
// Local: every start ends with one look for queued messages (nearly always none), so it costs no round trip.
const { deliverPendingMessages, givePendingMessagesUp } = proxyLocalActivities<Activities>(
  START_TASK_ACTIVITY_OPTIONS.deliver,
);
const { askAdmission } = proxyLocalActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.quick);

/** The patch that added the delivery of messages queued during the start. */
const PENDING_MESSAGES = 'start-task-pending-messages';
/** The patch that added the search attributes (see where it is used). */
const START_TASK_SEARCH_ATTRIBUTES = 'start-task-search-attributes';
/** The patch that added the delete of the sandbox a failed start created (see where it is used). */
const DELETE_OWN_SANDBOX = 'start-task-delete-own-sandbox';
/** The patch that made a start wait its turn in its user's line (see where it is used). */
const START_ADMISSION = 'start-task-admission';
/** The patch that made a start wait its turn in its organization's line too (see where it is used). */
const ORGANIZATION_ADMISSION = 'start-task-organization-admission';
/** How often an admitted start whose room was taken meanwhile goes back in line before it fails with the quota's reason. */
const MAX_REQUEUES = 3;

/** The quota's refusal of a sandbox the line had found room for. */
function isOverQuota(e: unknown): boolean {
  return (
    e instanceof ActivityFailure &&
    e.cause instanceof ApplicationFailure &&
    e.cause.type === START_TASK_FAILURES.overQuota
  );
}

/** What a person can act on: the message of the failure that stopped the start, or which step ran out of time. */
function detailOf(e: unknown): string {
  const step = e instanceof ActivityFailure ? e.activityType : undefined;
  let cause: unknown = e;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof TimeoutFailure)
    return `The step ${step ?? 'of the start'} did not finish in time (${cause.timeoutType === 'HEARTBEAT' ? 'its worker stopped answering' : 'its timeout passed'}); start again`;
  if (cause instanceof ApplicationFailure) return cause.message;
  return `${step ? `The step ${step} failed: ` : ''}${cause instanceof Error ? cause.message : String(cause)}`;
}

export async function startTaskWorkflow(input: StartTaskWorkflowInput): Promise<StartTaskSnapshot[]> {
  const { taskId, userId, request, settings } = input;
  const { waitForSandbox } = proxyActivities<Activities>(
    withTimeout(START_TASK_ACTIVITY_OPTIONS.long, settings.sandboxWaitMs),
  );
  const { prepareRepository } = proxyActivities<Activities>(START_TASK_ACTIVITY_OPTIONS.long);
  const { runSetupScript } = proxyActivities<Activities>(
    withTimeout(START_TASK_ACTIVITY_OPTIONS.long, settings.setupScriptTimeoutMs),
  );

  const snapshots: StartTaskSnapshot[] = [];
  setHandler(startTaskSnapshotsQuery, () => snapshots);
  // stream-start waits here for the next status instead of reading MongoDB (SPEC 4.2; docs/api.md, "Starting conversations").
  let ended = false;
  setHandler(
    startTaskSnapshotsAfterUpdate,
    async ({ after, firstAt }) => {
      const otherRun = () => firstAt !== undefined && snapshots.length > 0 && snapshots[0]!.updated_at !== firstAt;
      await condition(() => snapshots.length > after || ended || otherRun());
      const from = otherRun() ? 0 : Math.min(after, snapshots.length);
      return { from, snapshots: snapshots.slice(from), done: ended };
    },
    {
      validator: ({ after, firstAt }) => {
        if (!Number.isSafeInteger(after) || after < 0) throw new Error('after must be a whole number >= 0');
        if (firstAt !== undefined && typeof firstAt !== 'string') throw new Error('firstAt must be a string');
      },
    },
  );
  // Messages queued while the start runs wait in MongoDB; each signal says there may be more to deliver.
  let messagesWaiting = true;
  setHandler(pendingMessagesSignal, () => void (messagesWaiting = true));
  /** The lines (their workflow ids) the start holds a place in or waits in: given back when it ends. */
  const lines: string[] = [];
  /** What the start has made so far (each status carries it). */
  const made = {
    sandbox_id: null as string | null,
    agent_server_url: null as string | null,
    app_conversation_id: null as string | null,
  };
  // Operators find starts by owner, conversation, sandbox and status (docs/operations.md, "Finding workflows").
  // Runs recorded before these attributes replay without them.
  const searchable = patched(START_TASK_SEARCH_ATTRIBUTES);
  const report = async (status: StartTaskStatus, detail: string | null = null) => {
    if (searchable) {
      upsertSearchAttributes([
        { key: SEARCH_ATTRIBUTE_KEYS.StartTaskStatus, value: status },
        ...(made.sandbox_id ? [{ key: SEARCH_ATTRIBUTE_KEYS.SandboxId, value: made.sandbox_id }] : []),
      ]);
    }
    snapshots.push(await recordStartTask(taskId, snapshots.length, { status, detail, ...made }));
  };
  if (searchable) {
    upsertSearchAttributes([
      { key: SEARCH_ATTRIBUTE_KEYS.OwnerUserId, value: userId },
      { key: SEARCH_ATTRIBUTE_KEYS.ConversationId, value: taskId },
    ]);
  }

  try {
    await report('WORKING');
    await report('WAITING_FOR_SANDBOX');
    const newSandboxId = uuid4();
    // Over the user's quotas, then over its organization's, the start waits its turn, still
    // WAITING_FOR_SANDBOX, its place in the detail. Runs recorded before each line replay without it.
    const admission = settings.admission;
    const userLine =
      !!admission && (admission.maxStarts !== null || admission.maxRunning !== null) && patched(START_ADMISSION);
    const organizationLine = !!admission && patched(ORGANIZATION_ADMISSION);
    let organizationId: string | undefined;
    const waitForTurns = async () => {
      if (userLine) await waitForTurn(admission!, newSandboxId, 'user');
      if (organizationLine) organizationId = await waitForTurn(admission!, newSandboxId, 'organization');
    };
    await waitForTurns();
    // Each step with a summary the Temporal UI shows in the history (what it works on, never a secret).
    const acquire = () =>
      acquireSandbox.executeWithOptions(
        {
          summary: request.sandbox_id ? `resume sandbox ${shown(request.sandbox_id)} if paused` : 'start a new sandbox',
        },
        [{ taskId, userId, sandboxId: request.sandbox_id, newSandboxId, organizationId }],
      );
    let sandboxId: string;
    for (let requeued = 0; ; requeued++) {
      try {
        sandboxId = await acquire();
        break;
      } catch (e) {
        // The room the line promised was taken meanwhile (a sandbox made or resumed through the api):
        // the start goes to the back of the line rather than failing, a few times.
        if (lines.length === 0 || !isOverQuota(e) || requeued >= MAX_REQUEUES) throw e;
        await leaveLines();
        await waitForTurns();
      }
    }
    made.sandbox_id = sandboxId;
    made.agent_server_url = await waitForSandbox.executeWithOptions(
      { summary: `wait for sandbox ${sandboxId} to run` },
      [{ userId, sandboxId, timeoutMs: settings.sandboxWaitMs }],
    );

    await report('PREPARING_REPOSITORY');
    const repository = request.selected_repository;
    const workingDir = await prepareRepository.executeWithOptions(
      {
        summary: repository
          ? `clone ${shown(repository)}${request.selected_branch ? ` branch ${shown(request.selected_branch)}` : ''}`
          : 'make an empty git workspace',
      },
      [{ taskId, sandboxId, repository, branch: request.selected_branch, gitProvider: request.git_provider ?? null }],
    );

    await report('RUNNING_SETUP_SCRIPT');
    await runSetupScript.executeWithOptions({ summary: `run the setup script (workspace ${shown(workingDir)})` }, [
      { taskId, userId, sandboxId, workingDir, timeoutMs: settings.setupScriptTimeoutMs },
    ]);

    await report('SETTING_UP_GIT_HOOKS');
    await setUpGitHooks.executeWithOptions({ summary: `install git hooks (workspace ${shown(workingDir)})` }, [
      { sandboxId, workingDir },
    ]);

    await report('SETTING_UP_SKILLS');
    const plugins = request.plugins ?? [];
    const skills = await loadSkills.executeWithOptions(
      { summary: `load skills (${plugins.length} plugin${plugins.length === 1 ? '' : 's'})` },
      [{ taskId, userId, sandboxId, workingDir, plugins }],
    );

    await report('STARTING_CONVERSATION');
    made.app_conversation_id = await startConversation.executeWithOptions(
      { summary: `start the agent in sandbox ${sandboxId}` },
      [{ taskId, userId, sandboxId, workingDir, skills }],
    );

    await report('READY');
  } catch (e) {
    let detail = detailOf(e);
    // A sandbox this start created for itself would run unused until its idle timeout: it goes before
    // the start reports ERROR, through the sandbox's own workflow. One the request named stays as it is.
    // Runs recorded before this replay without it.
    const ownSandbox = request.sandbox_id ? null : made.sandbox_id;
    if (ownSandbox && patched(DELETE_OWN_SANDBOX)) {
      const outcome = await deleteStartSandbox
        .executeWithOptions({ summary: `delete sandbox ${ownSandbox} (the start failed)` }, [
          { taskId, userId, sandboxId: ownSandbox },
        ])
        .catch(
          (failure: unknown) =>
            `The sandbox ${ownSandbox} that this start created could not be deleted: ${detailOf(failure)}`,
        );
      if (outcome) detail = `${detail}\n${outcome}`;
    }
    await report('ERROR', detail);
  }
  ended = true;
  // Its places in line go to the next starts (a line also finds an ended start by its record).
  // (Sent beside the delivery of queued messages, not before it: that waits for no round trip.)
  const left = leaveLines();
  if (patched(PENDING_MESSAGES)) await settlePendingMessages();
  await left;
  // Every waiting reader has its answer (the status list ended) before the workflow closes.
  await condition(allHandlersFinished);
  return snapshots;

  /** Gives the start's places in line back (a line that has ended already has nothing to give back). */
  async function leaveLines(): Promise<void> {
    const left = lines.splice(0);
    await Promise.all(
      left.map((lineId) =>
        getExternalWorkflowHandle(lineId)
          .signal(admissionReleaseSignal, { taskId })
          .catch(() => undefined),
      ),
    );
  }

  /**
   * Asks the user's line, or the line of the organization the user acts in, for a turn and waits for it,
   * reporting each new place; past the wait's bound the start fails (and leaves the line, like any start
   * that ends). A start with nothing to wait for (no room needed, no bound on starts, an organization
   * without quotas) is not put in line. Answers the organization a start admitted by its line counts in.
   */
  async function waitForTurn(
    admission: NonNullable<StartTaskSettings['admission']>,
    newSandboxId: string,
    line: AdmissionLineKind,
  ): Promise<string | undefined> {
    let verdict: AdmissionVerdict | null = null;
    let heard = false;
    setHandler(admissionVerdictSignal, (v) => {
      // Only this line's word counts (a verdict without `line` is the user's line's); admitted stays
      // admitted: a late place never takes it back.
      if ((v.line ?? 'user') !== line) return;
      if (!verdict?.admitted) verdict = v;
      heard = true;
    });
    const { maxStarts, maxRunning, queueWaitMs, pollMs } = admission;
    const named = request.sandbox_id ?? null;
    const asked = await askAdmission({
      userId,
      taskId,
      newSandboxId: named ? null : newSandboxId,
      namedSandboxId: named,
      limits: { maxStarts, maxRunning },
      pollMs,
      ...(line === 'organization' ? { line } : {}),
    });
    if (!asked.inLine) return asked.organizationId;
    // Runs recorded before organization lines were told no line id: theirs is the user's.
    lines.push(asked.lineId ?? startAdmissionWorkflowId(userId));
    // One timer bounds the whole wait; it goes when the start is admitted.
    let timedOut = false;
    const bound = new CancellationScope();
    bound
      .run(() => sleep(queueWaitMs))
      .then(
        () => void (timedOut = true),
        () => undefined,
      );
    let last: string | null = null;
    try {
      for (;;) {
        await condition(() => heard || timedOut);
        if (!heard) {
          throw ApplicationFailure.nonRetryable(
            `The start waited ${Math.round(queueWaitMs / 1000)} s in ${line === 'user' ? 'line' : "its organization's line"} for its turn and did not get it (START_QUEUE_WAIT_MS)${last ? `; last seen at ${last}` : ''}`,
          );
        }
        heard = false;
        const v = verdict as AdmissionVerdict | null;
        if (!v) continue;
        if (v.admitted) return asked.organizationId;
        const place = `place ${v.place}: ${v.reason}`;
        if (place !== last) await report('WAITING_FOR_SANDBOX', `Waiting in line at ${place}`);
        last = place;
      }
    } finally {
      bound.cancel();
    }
  }

  /**
   * After READY: deliver the queued messages in order, again while signals say more came (a signal that
   * lands as the workflow completes makes the server refuse the completion, so none is left behind).
   * After ERROR, or a delivery that kept failing: they are marked UNDELIVERED with why.
   */
  async function settlePendingMessages(): Promise<void> {
    const failed = snapshots.at(-1)?.status === 'ERROR';
    while (messagesWaiting) {
      messagesWaiting = false;
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
