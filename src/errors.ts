/**
 * Errors of the domain: what went wrong, in the terms of the product, for any caller. Domain code
 * (services, stores, the runtime's conversation registry) throws these and knows nothing of its
 * transports: the api's error middleware (src/web/errors.ts) turns each kind into its HTTP status, and
 * the worker's activities (activities/domain-failure.ts) into an ApplicationFailure that Temporal retries
 * only when retrying can help.
 */
import type { ValidationDetail } from './schemas/validation-detail';

export type DomainErrorKind =
  | 'not_found'
  | 'forbidden'
  | 'conflict'
  | 'invalid_input'
  | 'bad_request'
  | 'unavailable'
  | 'upstream_failed'
  | 'too_many';

export abstract class DomainError extends Error {
  abstract readonly kind: DomainErrorKind;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
  /** Whether the same call may succeed later without any change by the caller. */
  get transient(): boolean {
    return false;
  }
}

/** The thing named does not exist, or is not the caller's to see. */
export class NotFound extends DomainError {
  readonly kind = 'not_found';
}

/** The caller is known but may not do this. */
export class Forbidden extends DomainError {
  readonly kind = 'forbidden';
}

/** The operation does not fit the current state (a duplicate id, a deleted sandbox, a concurrent change). */
export class Conflict extends DomainError {
  readonly kind = 'conflict';
}

/** A request that no state can satisfy (a path leaving its directory). */
export class BadRequest extends DomainError {
  readonly kind = 'bad_request';
}

/** Values that failed validation, each with its location (the spec's HTTPValidationError entries). */
export class InvalidInput extends DomainError {
  readonly kind = 'invalid_input';
  constructor(readonly details: ValidationDetail[]) {
    super(`request validation failed: ${details.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ')}`);
  }
}

/**
 * A dependency cannot serve now (a busy database, a workflow service that did not answer). With
 * `retryAfterSeconds` it is transient: the same call may succeed then; without, only a change by the
 * operator helps (a runtime started without the control plane's address).
 */
export class Unavailable extends DomainError {
  readonly kind = 'unavailable';
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
  override get transient(): boolean {
    return this.retryAfterSeconds !== undefined;
  }
}

/** A provider this service relies on (a sandbox provider) failed to carry out the operation. */
export class UpstreamFailed extends DomainError {
  readonly kind = 'upstream_failed';
}

/** The caller already has as many of these as it may (queued messages): it must wait for some to go. */
export class TooMany extends DomainError {
  readonly kind = 'too_many';
}
