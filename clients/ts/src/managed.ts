import { LockInvalidError, LockNotAcquiredError } from "./errors.js";
import { newOwner } from "./owner.js";
import { asyncDispose } from "./platform.js";
import { sleep } from "./transport.js";
import type { Claim, LockDriver, LockGrant } from "./types.js";
import { checkSeconds } from "./validate.js";

/** What a ManagedLock is built from (LockManager.make). */
export interface ManagedLockSpec {
  driver: LockDriver;
  /** The keys as given, and as sent (prefixed). */
  keys: string[];
  stored: string[];
  ttl: number;
  claim: Claim;
  holder: string;
  /** The cap on each grant's total hold time in seconds (LockRequest.maxHold); undefined: none. */
  maxHold?: number | undefined;
}

/**
 * One named lock (or set of keys, taken all or none), built by Lock.make
 * without being acquired. Each acquisition has an owner of its own, so a
 * late release of an earlier one never frees a later one.
 */
export class ManagedLock implements AsyncDisposable {
  readonly #s: ManagedLockSpec;
  #owner: string | undefined;
  #fences: number[] = [];
  #expiresAt: number | undefined;
  #capAt: number | undefined;

  constructor(spec: ManagedLockSpec) {
    this.#s = spec;
  }

  /** The lock's key (the first, for several). */
  get key(): string {
    return this.#s.keys[0]!;
  }
  /** Every key of the lock, as given. */
  get keys(): readonly string[] {
    return this.#s.keys;
  }
  /** Whether this instance holds the lock, as far as it last heard. */
  get isAcquired(): boolean {
    return this.#owner !== undefined;
  }
  /** A client-side estimate of when the lease ends, counted from when the last acquire or refresh was sent; undefined when not held. */
  get expiresAt(): Date | undefined {
    return this.#expiresAt === undefined ? undefined : new Date(this.#expiresAt);
  }
  /** A client-side estimate of when the grant reaches its cap on total hold time (maxHold), counted from when the acquire was sent; undefined when not held or uncapped. */
  get maxHoldAt(): Date | undefined {
    return this.#capAt === undefined ? undefined : new Date(this.#capAt);
  }
  /** The fencing token of the grant (the first key's): higher than any earlier grant of the key. 0 when not held or the driver has none. */
  get fence(): number {
    return this.#fences[0] ?? 0;
  }
  /** Each key's fence, in the order of keys. */
  get fences(): readonly number[] {
    return this.#fences;
  }
  /** What this lock's owner says of its holder, as others see it in LockNotAcquiredError.holder. */
  get holder(): string {
    return this.#s.holder;
  }
  /** The lease in seconds. */
  get ttl(): number {
    return this.#s.ttl;
  }

  /** Tries once; true when acquired (or, when held already, refreshed). */
  async acquire(): Promise<boolean> {
    if (this.isAcquired) return this.refresh();
    return (await this.#take(0)).acquired;
  }

  /**
   * Waits up to timeoutSeconds for the lock (in the key's first come,
   * first served queue on a driver that waits, otherwise by trying every
   * retryDelayMs), and throws LockNotAcquiredError when the time runs out
   * (Infinity: never). An abort of signal ends the wait with signal.reason.
   */
  async block(timeoutSeconds: number, retryDelayMs = 100, signal?: AbortSignal): Promise<void> {
    if (timeoutSeconds !== Infinity) checkSeconds(timeoutSeconds, "timeout", true);
    if (this.isAcquired && (await this.refresh())) return;
    const d = this.#s.driver;
    if (d.claim) {
      const g = await this.#take(timeoutSeconds, signal);
      if (!g.acquired) throw busy(this.key, g);
      return;
    }
    const deadline = Date.now() + timeoutSeconds * 1000;
    for (;;) {
      const g = await this.#take(0);
      if (g.acquired) return;
      if (Date.now() + retryDelayMs > deadline) throw busy(this.key, g);
      await sleep(retryDelayMs, signal);
    }
  }

  /** Releases the lock; false when it was not held (never acquired, released, or lapsed). */
  async release(): Promise<boolean> {
    const owner = this.#owner;
    if (owner === undefined) return false;
    this.#forget();
    const done = await Promise.all(this.#s.stored.map((k) => this.#s.driver.release(k, owner)));
    return done.every(Boolean);
  }

  /** Removes the lock whoever holds it. */
  async forceRelease(): Promise<void> {
    this.#forget();
    await Promise.all(this.#s.stored.map((k) => this.#s.driver.forceRelease(k)));
  }

  /**
   * Renews the lease for another TTL; false, and isAcquired cleared, when
   * the lock is no longer this instance's. Throws when the backend does not
   * answer (the lock may still be held).
   */
  async refresh(): Promise<boolean> {
    const owner = this.#owner;
    if (owner === undefined) return false;
    const { driver, stored, ttl } = this.#s;
    const sent = Date.now();
    const ok = await Promise.all(stored.map((k) => (driver.extend ? driver.extend(k, owner, ttl) : driver.acquire(k, owner, ttl))));
    if (this.#owner !== owner) return false; // released meanwhile
    if (!ok.every(Boolean)) {
      this.#forget();
      return false;
    }
    this.#expiresAt = Math.min(sent + ttl * 1000, this.#capAt ?? Infinity);
    return true;
  }

  /** Releases the lock at the end of an `await using` block. */
  async [asyncDispose](): Promise<void> {
    await this.release();
  }

  async #take(waitSeconds: number, signal?: AbortSignal): Promise<LockGrant> {
    const { driver, stored, ttl, claim, holder, maxHold } = this.#s;
    const owner = await newOwner(holder);
    const sent = Date.now();
    let g: LockGrant;
    if (driver.claim) {
      g = await driver.claim({ keys: stored, owner, ttl, claim, maxHold, wait: waitSeconds, signal });
    } else {
      if (stored.length !== 1 || claim.kind !== "mutex" || maxHold !== undefined) {
        throw new LockInvalidError("options", "this driver takes one key's mutex only, uncapped (it has no claim method)");
      }
      g = { acquired: await driver.acquire(stored[0]!, owner, ttl), fences: [] };
    }
    if (!g.acquired && g.busy) {
      // Name the key as the caller did, without the prefix.
      g = { ...g, busy: { ...g.busy, key: this.#s.keys[stored.indexOf(g.busy.key)] ?? this.key } };
    }
    if (g.acquired) {
      this.#owner = owner;
      this.#fences = g.fences;
      this.#capAt = maxHold === undefined ? undefined : sent + maxHold * 1000;
      this.#expiresAt = Math.min(sent + ttl * 1000, this.#capAt ?? Infinity);
    }
    return g;
  }

  #forget(): void {
    this.#owner = undefined;
    this.#fences = [];
    this.#expiresAt = undefined;
    this.#capAt = undefined;
  }
}

function busy(key: string, g: LockGrant): LockNotAcquiredError {
  const b = g.busy;
  return new LockNotAcquiredError(b?.key ?? key, b ? { holder: b.holder, ttl: b.ttl } : undefined);
}
