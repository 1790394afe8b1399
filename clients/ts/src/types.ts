import type { HeldBy } from "./errors.js";

/** What a request claims of its keys. */
export type Claim =
  | { kind: "mutex" }
  /** One of limit holders at once. */
  | { kind: "semaphore"; limit: number }
  /** A side of a read/write lock: readers share, a writer is alone. */
  | { kind: "rwlock"; write: boolean };

/** One acquire, whatever it claims: the keys (all or none), owner, lease and wait. */
export interface LockRequest {
  keys: string[];
  owner: string;
  /** Lease in seconds. */
  ttl: number;
  claim: Claim;
  /**
   * A cap in seconds on each grant's total hold time, however often it is
   * refreshed (0 or absent: none), enforced by the backend: a grant made at
   * t lasts until t+maxHold at the latest; a refresh sets min(now+ttl, cap)
   * and keeps the first grant's cap; at the cap the grant ends as at an
   * expiry. A waiter's cap counts from its grant.
   */
  maxHold?: number | undefined;
  /** Seconds to wait in the key's first-come-first-served queue; 0: answer at once. */
  wait: number;
  /** Ends a wait early; the driver then throws signal.reason. */
  signal?: AbortSignal | undefined;
}

/** The answer to a LockRequest. */
export interface LockGrant {
  acquired: boolean;
  /** Each key's fence, in the request's order, when acquired. */
  fences: number[];
  /** When not acquired: the key in the way and its holder. */
  busy?: { key: string } & HeldBy;
}

/** Who holds a key and who waits for it, as a driver's inspect tells. */
export interface Holding {
  /** What the key is held as (for an rwlock, write is unused). */
  claim: Claim;
  /** The grants, by fence; ttl is seconds left on each lease. */
  holders: { owner: string; fence: number; ttl: number; write: boolean }[];
  /** The queued owners, first come first served. */
  waiters: { owner: string; write: boolean }[];
}

/**
 * The contract of a storage backend; every method atomic at the backend.
 * The first four are the seed's; claim is the one acquire with fences,
 * waits, shared claims and several keys, which the manager uses when a
 * driver has it and otherwise falls back to acquire (a single key's mutex,
 * waits polled).
 */
export interface LockDriver {
  /** true when acquired (or refreshed: owner held it), false when held by another. */
  acquire(key: string, owner: string, ttlSeconds: number): Promise<boolean>;
  /** Owner-guarded delete; true when released. */
  release(key: string, owner: string): Promise<boolean>;
  /** Unconditional delete. */
  forceRelease(key: string): Promise<void>;
  /** true when the lock is held. */
  exists(key: string): Promise<boolean>;
  /** Owner-guarded refresh of the lease; true when owner still held it. Absent: acquire is used. */
  extend?(key: string, owner: string, ttlSeconds: number): Promise<boolean>;
  /** Who holds key and who waits for it; undefined when nobody holds it. Needed to read an election's leader. */
  inspect?(key: string): Promise<Holding | undefined>;
  /** Yields whenever key may have changed hands (a grant, a release, an expiry), until signal aborts: an observer looks again then rather than on its timer. */
  changes?(key: string, signal?: AbortSignal): AsyncIterable<unknown>;
  /** The one acquire (see LockRequest). */
  claim?(request: LockRequest): Promise<LockGrant>;
  /** Releases background resources (timers, connections). */
  dispose?(): void | Promise<void>;
}
