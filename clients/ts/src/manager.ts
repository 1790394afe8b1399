import { checkValue, leaderOf, observe, type Leader, type ObserveOptions } from "./election.js";
import { configFromEnv, driverOf, type ResolvedLockConfig } from "./config.js";
import { LockInvalidError, LockLostError } from "./errors.js";
import { ManagedLock } from "./managed.js";
import { defaultHolder } from "./owner.js";
import { anySignal } from "./platform.js";
import type { Claim, LockDriver } from "./types.js";
import { checkKeys, checkSeconds, millis } from "./validate.js";
import { limits } from "./wire.gen.js";

/** What a lock claims of its keys, as the Go library's options: a mutex unless one is given. */
export interface ClaimOptions {
  /** At most this many holders at once (a semaphore). */
  semaphore?: number;
  /** A side of a read/write lock: readers share the key, a writer holds it alone. */
  mode?: "read" | "write";
  /**
   * Seconds each grant may be held in all, however often it is refreshed:
   * the backend ends it there as at an expiry and the key passes on, so a
   * holder that is alive but wedged cannot keep it. The callback's signal
   * is aborted a margin before, with Lock.Lost of reason "max-hold".
   */
  maxHold?: number;
}

/** Options of Lock.try. */
export interface TryOptions extends ClaimOptions {
  /** Renew the lease in the background while the callback runs. */
  refresh?: boolean;
  /** Seconds between renewals; default a third of the TTL. */
  refreshEvery?: number;
  /** Aborts the callback's signal too. */
  signal?: AbortSignal;
}

/** Options of Lock.block. */
export interface BlockOptions extends TryOptions {
  /** Most seconds to wait for the lock; default the TTL (a campaign's: Infinity, until signal aborts). */
  timeout?: number;
  /**
   * Stands in the election named key with this value (an address, a host
   * name; what Lock.leader tells others): waits its turn, first come first
   * served, and runs the callback as leader with the lease kept (refresh),
   * lock.fence being the term. The callback's signal is aborted when the
   * leadership is lost; returning from the callback resigns, and the next
   * candidate leads at once. A mutex of one key.
   */
  campaign?: string;
  /** Milliseconds between tries on a driver that cannot wait itself; default 100. */
  retryDelay?: number;
}

/** A callback run under a lock; signal is aborted before the lease can run out, or when the lock is lost. */
export type LockCallback<T> = (lock: ManagedLock, signal: AbortSignal) => Promise<T> | T;

/** A key, or several keys taken all or none. */
export type LockKey = string | readonly string[];

/** Builds and runs locks on one driver. */
export class LockManager {
  readonly driver: LockDriver;
  readonly prefix: string;
  readonly holder: string;

  constructor(driver: LockDriver, options: { prefix?: string; holder?: string } = {}) {
    this.driver = driver;
    this.prefix = options.prefix ?? "";
    this.holder = options.holder ?? defaultHolder();
  }

  /** A manager with the driver config names; with none, the LOCKCLUSTER_* variables'. */
  static fromConfig(config: ResolvedLockConfig = configFromEnv()): LockManager {
    return new LockManager(driverOf(config), { prefix: config.prefix, ...(config.holder ? { holder: config.holder } : {}) });
  }

  /** A handle on the lock of key (or keys, all or none) for ttlSeconds, not acquired. Bad input throws LockInvalidError here, before any request. */
  make(key: LockKey, ttlSeconds: number, options: ClaimOptions = {}): ManagedLock {
    return this.#make(key, ttlSeconds, options, this.holder);
  }

  #make(key: LockKey, ttlSeconds: number, options: ClaimOptions, holder: string): ManagedLock {
    const keys = typeof key === "string" ? [key] : [...key];
    checkKeys(keys.map((k) => this.prefix + k));
    checkSeconds(ttlSeconds, "ttl");
    const { maxHold } = options;
    if (maxHold !== undefined) {
      checkSeconds(maxHold, "maxHold");
      if (millis(maxHold) > limits["AcquireRequest.max_hold_ms.maximum"]) throw new LockInvalidError("maxHold", `${maxHold} seconds; give at most ${limits["AcquireRequest.max_hold_ms.maximum"] / 1000}`);
    }
    return new ManagedLock({ driver: this.driver, keys, stored: keys.map((k) => this.prefix + k), ttl: ttlSeconds, claim: claimOf(options), holder, maxHold });
  }

  /** Acquires once, runs cb, always releases; throws LockNotAcquiredError at once when held. */
  async try<T>(key: LockKey, ttlSeconds: number, cb: LockCallback<T>, options: TryOptions = {}): Promise<T> {
    const lock = this.make(key, ttlSeconds, options);
    checkRun(options);
    await lock.block(0, 0, options.signal);
    return run(lock, cb, options);
  }

  /** Waits up to options.timeout seconds (default the TTL) for the lock, runs cb, always releases; with campaign, leads an election (BlockOptions.campaign). */
  async block<T>(key: LockKey, ttlSeconds: number, cb: LockCallback<T>, options: BlockOptions = {}): Promise<T> {
    const { campaign } = options;
    if (campaign !== undefined) {
      checkValue(campaign);
      if (typeof key !== "string" || options.semaphore !== undefined || options.mode !== undefined) {
        throw new LockInvalidError("campaign", "an election is a mutex of one key; give no semaphore, mode or several keys");
      }
    }
    const lock = this.#make(key, ttlSeconds, options, campaign ?? this.holder);
    checkRun(options);
    await lock.block(options.timeout ?? (campaign !== undefined ? Infinity : ttlSeconds), options.retryDelay ?? 100, options.signal);
    return run(lock, cb, campaign !== undefined ? { ...options, refresh: true } : options);
  }

  /** The leader of the election name (BlockOptions.campaign), or undefined when nobody leads. */
  leader(name: string): Promise<Leader | undefined> {
    checkKeys([this.prefix + name]);
    return leaderOf(this.driver, this.prefix + name);
  }

  /** The leader of the election name as it changes, until options.signal aborts (see observe in election.ts). */
  observe(name: string, options: ObserveOptions = {}): AsyncGenerator<Leader | undefined> {
    checkKeys([this.prefix + name]);
    if (options.every !== undefined) checkSeconds(options.every, "every");
    return observe(this.driver, this.prefix + name, options);
  }

  /** Releases the driver's background resources. */
  async dispose(): Promise<void> {
    await this.driver.dispose?.();
  }
}

function claimOf(o: ClaimOptions): Claim {
  if (o.semaphore !== undefined && o.mode !== undefined) throw new LockInvalidError("options", "semaphore and mode are two kinds of claim; give one");
  if (o.semaphore !== undefined) {
    if (!Number.isInteger(o.semaphore) || o.semaphore < 1 || o.semaphore > 0xffffffff) throw new LockInvalidError("semaphore", `${o.semaphore}; give a whole number of holders, 1 or more`);
    return { kind: "semaphore", limit: o.semaphore };
  }
  if (o.mode !== undefined) {
    if (o.mode !== "read" && o.mode !== "write") throw new LockInvalidError("mode", `${JSON.stringify(o.mode)}; give "read" or "write"`);
    return { kind: "rwlock", write: o.mode === "write" };
  }
  return { kind: "mutex" };
}

function checkRun(o: TryOptions): void {
  if (o.refreshEvery !== undefined) checkSeconds(o.refreshEvery, "refreshEvery");
}

/**
 * Runs cb under the held lock and releases it. The callback's signal is
 * aborted, with a LockLostError as its reason, a margin before the lease
 * could run out (without refresh), or when a refresh finds the lock gone
 * or the backend silent that close to the end; run then throws that error
 * once cb has settled, whatever cb returned.
 */
async function run<T>(lock: ManagedLock, cb: LockCallback<T>, o: TryOptions): Promise<T> {
  const ac = new AbortController();
  const signal = o.signal ? anySignal([ac.signal, o.signal]) : ac.signal;
  const ttlMs = lock.ttl * 1000;
  // Abort this long before the estimated end of the lease: a tenth of it,
  // between 20ms and 2s, so that the callback can stop in time.
  const margin = Math.min(2000, Math.max(20, ttlMs / 10));
  const everyMs = (o.refreshEvery ?? lock.ttl / 3) * 1000;
  let lost: LockLostError | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let silent: unknown; // the error of the last refresh, while the backend does not answer
  const lose = (reason: LockLostError["reason"], cause?: unknown) => {
    if (lost) return;
    lost = new LockLostError(lock.key, reason, { cause });
    ac.abort(lost);
  };
  const left = () => (lock.expiresAt?.getTime() ?? 0) - margin - Date.now();
  // The lease ends at the cap (expiresAt is clamped to it): no refresh helps.
  const capped = () => lock.maxHoldAt !== undefined && lock.maxHoldAt.getTime() === lock.expiresAt?.getTime();
  const arm = (ms: number) => {
    if (stopped || lost) return;
    timer = setTimeout(tick, Math.max(0, Math.min(ms, left())));
  };
  const tick = async () => {
    if (stopped || lost) return;
    if (left() <= 0) {
      // Past the point where the lease can be trusted: a refresh now could
      // renew a lock someone else has held meanwhile (a stalled process).
      return lose(capped() ? "max-hold" : silent === undefined ? "expired" : "unavailable", silent);
    }
    if (!o.refresh) return arm(left());
    try {
      const until = left() + Date.now(); // the lease's trusted end before this refresh
      if (!(await lock.refresh())) return lose(Date.now() >= until ? "expired" : "not-held");
      silent = undefined;
      arm(everyMs);
    } catch (err) {
      // The backend did not answer: try again soon, until the margin.
      silent = err;
      if (left() <= 0) return lose("unavailable", err);
      arm(Math.min(everyMs, 200));
    }
  };
  arm(o.refresh ? everyMs : left());
  try {
    const out = await cb(lock, signal);
    if (lost) throw lost;
    return out;
  } catch (err) {
    throw lost ?? err;
  } finally {
    stopped = true;
    clearTimeout(timer);
    await lock.release().catch(() => {
      // The backend did not answer: the lease runs out on its own.
    });
  }
}
