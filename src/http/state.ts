import type { Logger } from '../logger';

/** The authenticated caller of an /api route. */
export interface Caller {
  userId: string;
}

declare module 'koa' {
  interface DefaultState {
    requestId: string;
    log: Logger;
    /** Parsed JSON body, or undefined when the request had none. */
    body?: unknown;
    caller?: Caller;
  }
}

/**
 * The authenticated user of a route that declares the APIKeyHeader scheme (its middleware sets the
 * caller before the handler runs). A route without it has no caller: a programming error, not a 401.
 */
export function callerId(ctx: { state: { caller?: Caller } }): string {
  const caller = ctx.state.caller;
  if (!caller) throw new Error('this route reads the caller but declares no APIKeyHeader security');
  return caller.userId;
}
