/**
 * The patch ids of the sandbox workflow: each marks where a change was made to it, so that runs recorded
 * before the change replay without it. An id never changes once a run has recorded it.
 */

/** The patch after which a process sandbox is placed on a host and acted on there only. */
export const HOST_QUEUES = 'sandbox-host-queues';
/** The patch that made the start depend on the status (see where it is used). */
export const START_ONLY_WHILE_STARTING = 'sandbox-start-only-while-starting';
/** The patch that made a RUNNING sandbox whose runtime is gone ERROR at once (LifecycleRules). */
export const GONE_IS_ERROR_AT_ONCE = 'sandbox-gone-is-error-at-once';
/**
 * The patch after which a health check that could not be made (its activity failed: the database or the
 * provider stalled, the worker went away) is no verdict on the runtime. Before it, such a failure counted
 * as a runtime that does not answer, and a database frozen for longer than the grace period put every
 * RUNNING sandbox in ERROR.
 */
export const FAILED_CHECK_IS_NO_VERDICT = 'sandbox-failed-check-is-no-verdict';
/**
 * The patch after which a resume that the provider refused as configured (a spec this worker cannot run:
 * ProviderConfigError) fails as a conflict with what the worker offers (409), not as a provider failure (502).
 */
export const UNRUNNABLE_RESUME_IS_CONFLICT = 'sandbox-unrunnable-resume-is-conflict';
