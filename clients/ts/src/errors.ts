/** The base of every error this package throws. */
export class LockError extends Error {
  /** The HTTP status an application may answer with when it lets the error through. */
  readonly status: number = 500;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Who holds a key that could not be taken, as far as the backend says. */
export interface HeldBy {
  /** What the holder's owner says of itself ("" when it says nothing). */
  holder: string;
  /** Seconds left on the holder's lease unless it refreshes it; undefined when unknown. */
  ttl: number | undefined;
}

/**
 * Another owner holds the key (or a wait for it ran out): contention, never
 * an outage. Status 409, for the framework's error handler.
 */
export class LockNotAcquiredError extends LockError {
  override readonly status = 409;
  /** The key found held (for several keys: the one in the way). */
  readonly key: string;
  /** What the holder's owner says of itself; "" when unknown. */
  readonly holder: string;
  /** Seconds left on the holder's lease; undefined when unknown. */
  readonly holderTtl: number | undefined;
  constructor(key: string, heldBy?: Partial<HeldBy>) {
    const who = heldBy?.holder ? ` by ${heldBy.holder}` : "";
    const left = heldBy?.ttl !== undefined ? ` for ${heldBy.ttl}s more` : "";
    super(`lock ${JSON.stringify(key)} is held${who}${left}`);
    this.key = key;
    this.holder = heldBy?.holder ?? "";
    this.holderTtl = heldBy?.ttl;
  }
}

/** Why a held lock was lost. */
export type LostReason =
  /** The lease ran out before it was refreshed or released. */
  | "expired"
  /** A refresh found the lock no longer held by this owner (force-released, or taken after a lapse). */
  | "not-held"
  /** The backend did not answer the refreshes before the lease could run out. */
  | "unavailable"
  /** The grant reached its cap on total hold time (maxHold), however it was refreshed. */
  | "max-hold";

/** A lock was held and is no longer: the work done under it cannot be trusted to have been exclusive. */
export class LockLostError extends LockError {
  override readonly status = 409;
  readonly key: string;
  readonly reason: LostReason;
  constructor(key: string, reason: LostReason, options?: { cause?: unknown }) {
    super(`lock ${JSON.stringify(key)} lost: ${reason}`, options);
    this.key = key;
    this.reason = reason;
  }
}

/**
 * The backend did not answer (no node reachable, no quorum, every try timed
 * out): an outage, never reported as contention. When outcomeUnknown is
 * true a request that changes state may have taken effect.
 */
export class LockUnavailableError extends LockError {
  override readonly status = 503;
  readonly outcomeUnknown: boolean;
  constructor(message: string, outcomeUnknown: boolean, options?: { cause?: unknown }) {
    super(message, options);
    this.outcomeUnknown = outcomeUnknown;
  }
}

/** A key, TTL, option or configuration the package refuses before any request. */
export class LockInvalidError extends LockError {
  override readonly status = 400;
  readonly field: string;
  constructor(field: string, reason: string) {
    super(`invalid ${field}: ${reason}`);
    this.field = field;
  }
}

/** Any other refusal of the backend (401, 403, 429, 501 ...), with its code and status. */
export class LockBackendError extends LockError {
  override readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(`${code} (${status}): ${message}`);
    this.status = status;
    this.code = code;
  }
}
