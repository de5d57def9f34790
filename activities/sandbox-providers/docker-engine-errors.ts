/** What the Docker engine answered when a call failed (dockerode's errors): its status and its words. */

export const statusOf = (e: unknown) => (e as { statusCode?: number }).statusCode;
/** What the engine said (dockerode's message wraps it). */
export const engineMessage = (e: unknown): string => {
  const said = (e as { json?: { message?: unknown } }).json?.message;
  return typeof said === 'string' ? said : (e as Error).message;
};
/** Null for a 404 (the object does not exist), any other failure thrown again. */
export const notFound = <T>(e: unknown): T | null => {
  if (statusOf(e) === 404) return null;
  throw e;
};
