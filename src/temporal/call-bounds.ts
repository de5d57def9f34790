/**
 * Every call of the api and the worker to the Temporal server is bounded. The client gives a call no
 * deadline of its own, and a frozen server (alive, its socket open, answering nothing) holds such a call
 * for minutes: gRPC's keepalive drops the connection after about 45 s and the retry interceptor then sends
 * it again, to the same frozen server. Measured: a workflow start, a signal, a describe and a terminate all
 * still waiting 200 s into a SIGSTOP of the dev server.
 *
 * So a connection made here gives each plain call (a start, a signal, a describe, a terminate) a deadline
 * of CALL_TIMEOUT_MS, retries included, unless the caller set one (`withDeadline`). The calls that wait on
 * purpose (an Update's acceptance or outcome, a query, a history long poll) are bounded by their callers
 * (withinBound in workflow-answer.ts), with WAITING_CALL_CEILING_MS as a net. A call that runs out, or a
 * server that cannot be reached, is Unavailable: the same call may work shortly.
 */
import { InterceptingCall, Metadata, status as GrpcStatus, type Interceptor, type NextCall } from '@grpc/grpc-js';
import { Connection, defaultGrpcRetryOptions, isGrpcServiceError, makeGrpcRetryInterceptor } from '@temporalio/client';
import { DomainError, Unavailable } from '../errors';

/** Longest wait for the answer to one plain call, retries included: below the api's answer deadline (9 s). */
export const CALL_TIMEOUT_MS = 8_000;

/** Seconds a client is asked to wait after the workflow service did not answer. */
const RETRY_AFTER_SECONDS = 5;

/**
 * Longest wait of one call that waits on purpose, when its caller set no deadline: a net under the callers'
 * own bounds (withinBound in workflow-answer.ts), above the server's long polls (about 20 s each).
 */
export const WAITING_CALL_CEILING_MS = 120_000;

/** Methods that wait on purpose (the server holds them until a worker acts): their callers bound them. */
const WAITING_METHODS: ReadonlySet<string> = new Set([
  'UpdateWorkflowExecution',
  'PollWorkflowExecutionUpdate',
  'ExecuteMultiOperation',
  'QueryWorkflow',
  'GetWorkflowExecutionHistory',
]);

/**
 * Gives a call without a deadline one `timeoutMs` from now (WAITING_CALL_CEILING_MS for those that wait on
 * purpose); outermost, so the deadline covers every retry.
 */
export function callDeadline(timeoutMs: number): Interceptor {
  return (options, nextCall) => {
    const path = options.method_definition.path;
    if (options.deadline !== undefined) return new InterceptingCall(nextCall(options));
    const bound = WAITING_METHODS.has(path.slice(path.lastIndexOf('/') + 1))
      ? Math.max(timeoutMs, WAITING_CALL_CEILING_MS)
      : timeoutMs;
    return new InterceptingCall(nextCall({ ...options, deadline: Date.now() + bound }));
  };
}

/** A call that never went out: it ends at once with `code`, as a unary call does (no message, then the status). */
function endedCall(code: GrpcStatus, details: string): ReturnType<NextCall> {
  const nothing = () => undefined;
  return {
    start(_metadata, listener) {
      setImmediate(() => {
        listener?.onReceiveMessage?.(null);
        listener?.onReceiveStatus?.({ code, details, metadata: new Metadata() });
      });
    },
    cancelWithStatus: nothing,
    getPeer: () => '',
    sendMessageWithContext: nothing,
    sendMessage: nothing,
    startRead: nothing,
    halfClose: nothing,
    getAuthContext: () => null,
  };
}

/**
 * The SDK's retry interceptor sends a retry from a timer; when the connection was closed in between (an api
 * or worker shutting down), making that call throws "Channel has been shut down" from the timer, an
 * uncaught exception, and the caller's promise never settles (measured). Here a call on a closed channel
 * ends CANCELLED instead (any other call that cannot be made: INTERNAL), which the retry interceptor
 * does not retry and hands to the caller.
 */
function endingOnClose(inner: Interceptor): Interceptor {
  return (options, nextCall) =>
    inner(options, (o) => {
      try {
        return nextCall(o);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        // Anything else a call cannot be made for is an internal failure, not a cancellation.
        return endedCall(/shut down/i.test(message) ? GrpcStatus.CANCELLED : GrpcStatus.INTERNAL, message);
      }
    });
}

/** A client connection (made on first use) whose plain calls are bounded, with the SDK's retries inside the bound. */
export function boundedConnection(address: string, timeoutMs: number = CALL_TIMEOUT_MS): Connection {
  return Connection.lazy({
    address,
    interceptors: [callDeadline(timeoutMs), endingOnClose(makeGrpcRetryInterceptor(defaultGrpcRetryOptions()))],
  });
}

/** gRPC codes of a server that did not answer in time, could not be reached, or is overloaded. */
const NOT_ANSWERED: ReadonlySet<number> = new Set([
  4 /* DEADLINE_EXCEEDED */, 8 /* RESOURCE_EXHAUSTED */, 14 /* UNAVAILABLE */,
]);

/** The workflow service did not answer (or could not be reached) in time: nothing says the call was refused. */
export function isTemporalUnreachable(e: unknown): boolean {
  for (let c = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) {
    if (isGrpcServiceError(c) && NOT_ANSWERED.has(c.code)) return true;
  }
  return false;
}

/** The api's view of a Temporal failure: a server that did not answer is Unavailable (503, Retry-After); anything else as it came. */
export function translateTemporalError(e: unknown): unknown {
  if (isTemporalUnreachable(e) && !(e instanceof DomainError))
    return new Unavailable('The workflow service did not answer; retry shortly', RETRY_AFTER_SECONDS, { cause: e });
  return e;
}
