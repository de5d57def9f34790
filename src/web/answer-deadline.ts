/**
 * Every request is answered within its deadline (ANSWER_DEADLINE_MS): with what its route made of it, or,
 * when a dependency is frozen or too slow, with a 503 and `Retry-After`. A client or a load balancer gives
 * up after about ten seconds; an answer it never reads helps nobody.
 *
 * The clock runs from the request's headers to its answer, except while the body is read: that is the
 * client's time, bounded by the server's `requestTimeout` (408), not the service's. The work of a route that
 * runs out goes on where it is (each store and Temporal call has its own bound below the deadline); what it
 * makes afterwards is dropped, and its failure is logged, so the 503 says the operation may still happen.
 */
import type { Middleware } from 'koa';
import { Unavailable } from '../errors';

/** Seconds a client is asked to wait after a request ran out of its deadline. */
const RETRY_AFTER_SECONDS = 2;

/** The request's clock, which the body reader stops while the client sends the body. */
export interface AnswerClock {
  pause(): void;
  resume(): void;
  /** Milliseconds left before the deadline (0 once it passed): a route that can answer early waits no longer. */
  remainingMs(): number;
}

declare module 'koa' {
  interface DefaultState {
    /** Set by answerDeadline for the request's life. */
    answerClock?: AnswerClock;
  }
}

/**
 * How long a route may still wait on work it can answer without (an operation a workflow carries on with),
 * keeping `marginMs` for the rest of the answer; undefined when the request has no deadline.
 */
export function answerWaitMs(state: { answerClock?: AnswerClock }, marginMs: number): number | undefined {
  const clock = state.answerClock;
  return clock ? Math.max(0, clock.remainingMs() - marginMs) : undefined;
}

export class AnswerDeadlineExpired extends Unavailable {
  constructor(readonly deadlineMs: number) {
    super(
      `The request was not answered within ${deadlineMs / 1000} s (a dependency is slow or not answering); ` +
        'it may still take effect: read the resource again, or retry shortly',
      RETRY_AFTER_SECONDS,
    );
    this.name = 'AnswerDeadlineExpired';
  }
}

export function answerDeadline(deadlineMs: number): Middleware {
  return async (ctx, next) => {
    let left = deadlineMs;
    let since = 0;
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    let expire!: (e: Error) => void;
    const expired = new Promise<never>((_resolve, reject) => (expire = reject));
    const arm = () => {
      since = Date.now();
      timer = setTimeout(() => expire(new AnswerDeadlineExpired(deadlineMs)), Math.max(0, left));
    };
    ctx.state.answerClock = {
      pause() {
        if (settled || timer === undefined) return;
        clearTimeout(timer);
        timer = undefined;
        left -= Date.now() - since;
      },
      resume() {
        if (settled || timer !== undefined) return;
        arm();
      },
      remainingMs() {
        return Math.max(0, timer === undefined ? left : left - (Date.now() - since));
      },
    };
    arm();
    const work = next();
    try {
      await Promise.race([work, expired]);
    } catch (e) {
      if (e instanceof AnswerDeadlineExpired) {
        // What the route still does is nobody's answer: its failure goes to the log, never unhandled.
        work.catch((err: unknown) =>
          ctx.state.log?.warn({ err }, 'a request that ran out of its deadline failed later'),
        );
      }
      throw e;
    } finally {
      settled = true;
      clearTimeout(timer);
    }
  };
}
