import { LockLostError, LockNotAcquiredError, LockUnavailableError } from "./errors.js";
import type { ManagedLock } from "./managed.js";
import { LockManager, type BlockOptions, type ClaimOptions, type LockCallback, type LockKey, type TryOptions } from "./manager.js";

let current: LockManager | undefined;

/**
 * The facade: static calls on the manager set with Lock.use, or, until
 * one is, a manager built from the LOCKCLUSTER_* variables (the memory
 * driver when none is set).
 */
export class Lock {
  /** The contention error, for catch blocks. */
  static readonly NotAcquired = LockNotAcquiredError;
  /** The error of a lock lost while held. */
  static readonly Lost = LockLostError;
  /** The error of a backend that did not answer. */
  static readonly Unavailable = LockUnavailableError;

  /** Makes manager the one the facade calls (a provider's onRegister). */
  static use(manager: LockManager | undefined): void {
    current = manager;
  }

  /** The manager the facade calls. */
  static get manager(): LockManager {
    return (current ??= LockManager.fromConfig());
  }

  static try<T>(key: LockKey, ttlSeconds: number, cb: LockCallback<T>, options?: TryOptions): Promise<T> {
    return Lock.manager.try(key, ttlSeconds, cb, options);
  }

  static block<T>(key: LockKey, ttlSeconds: number, cb: LockCallback<T>, options?: BlockOptions): Promise<T> {
    return Lock.manager.block(key, ttlSeconds, cb, options);
  }

  static make(key: LockKey, ttlSeconds: number, options?: ClaimOptions): ManagedLock {
    return Lock.manager.make(key, ttlSeconds, options);
  }
}
