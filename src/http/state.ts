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
