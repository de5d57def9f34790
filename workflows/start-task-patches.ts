/**
 * The patch ids of the start-task workflow: each marks where a change was made to it, so that runs
 * recorded before the change replay without it. An id never changes once a run has recorded it.
 */

/** The patch that added the delivery of messages queued during the start. */
export const PENDING_MESSAGES = 'start-task-pending-messages';
/** The patch that added the search attributes (see where it is used). */
export const START_TASK_SEARCH_ATTRIBUTES = 'start-task-search-attributes';
/** The patch that added the delete of the sandbox a failed start created (see where it is used). */
export const DELETE_OWN_SANDBOX = 'start-task-delete-own-sandbox';
/** The patch that made a start wait its turn in its user's line (see where it is used). */
export const START_ADMISSION = 'start-task-admission';
/** The patch that made a start wait its turn in its organization's line too (see where it is used). */
export const ORGANIZATION_ADMISSION = 'start-task-organization-admission';
