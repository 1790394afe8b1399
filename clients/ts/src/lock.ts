import type { Leader, ObserveOptions } from "./election.js";
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

  /** The leader of the election name (a campaign: Lock.block with { campaign }), or undefined when nobody leads. */
  static leader(name: string): Promise<Leader | undefined> {
    return Lock.manager.leader(name);
  }

  /** The leader of the election name as it changes: first as it is, then at every change, until options.signal aborts. */
  static observe(name: string, options?: ObserveOptions): AsyncGenerator<Leader | undefined> {
    return Lock.manager.observe(name, options);
  }
}
