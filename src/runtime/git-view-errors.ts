/** The reasons a git view can fail, and the error that carries one. */

export const GIT_VIEW_FAILURES = [
  'outside',
  'not_found',
  'not_a_repository',
  'not_a_file',
  'unknown_ref',
  'too_large',
  'timeout',
  'busy',
  'unavailable',
] as const;
export type GitViewFailure = (typeof GIT_VIEW_FAILURES)[number];

/** Why a view cannot be given; the routes map each reason to a status. */
export class GitViewError extends Error {
  constructor(
    readonly reason: GitViewFailure,
    message: string,
  ) {
    super(message);
    this.name = 'GitViewError';
  }
}
