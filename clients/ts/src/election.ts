import { LockError, LockInvalidError } from "./errors.js";
import { holderOf } from "./owner.js";
import { anySignal } from "./platform.js";
import type { LockDriver } from "./types.js";

/**
 * Leader election, as the Go library's package election has it, on the
 * lock calls: a campaign is Lock.block(name, ttl, cb, { campaign: value }),
 * which waits its turn first come first served and runs cb as leader with
 * the lease kept; the term is the lock's fence (strictly increasing for one
 * election); the value travels in the owner after its random token, where
 * a lock's holder goes; returning from cb resigns. This file reads the
 * leader and observes it.
 */

/** The longest campaign value in bytes: the owner is a 32-digit token, a colon and the value, 1024 bytes at most. */
export const MAX_VALUE_BYTES = 1024 - 33;

/** Who leads an election, as the backend sees it. */
export interface Leader {
  /** What the leader campaigned with. */
  value: string;
  /** The leadership's fence: strictly increasing for one election. */
  term: number;
  /** Seconds left on the leader's lease unless it refreshes it (leaders do). */
  ttl: number;
}

/** Options of observe. */
export interface ObserveOptions {
  /** Ends the observation. */
  signal?: AbortSignal;
  /** Seconds between looks besides the driver's own word of a change; default 0.2. */
  every?: number;
}

/** Throws LockInvalidError for a value no owner can carry. */
export function checkValue(value: unknown): asserts value is string {
  if (typeof value !== "string") throw new LockInvalidError("campaign", "the value must be a string");
  if (new TextEncoder().encode(value).length > MAX_VALUE_BYTES) throw new LockInvalidError("campaign", `the value is longer than ${MAX_VALUE_BYTES} bytes`);
}

/** The leader of the election held as key, or undefined when nobody leads. The driver must tell who holds a key (inspect). */
export async function leaderOf(driver: LockDriver, key: string): Promise<Leader | undefined> {
  if (!driver.inspect) throw new LockInvalidError("driver", "this driver cannot say who holds a key (it has no inspect)");
  const h = await driver.inspect(key);
  const first = h?.holders[0];
  if (!first) return undefined;
  if (!/^[0-9a-f]{32}:/.test(first.owner)) {
    throw new LockError(`election ${JSON.stringify(key)}: held by ${JSON.stringify(first.owner)}, not by a candidate: is the name used as a lock too?`);
  }
  return { value: holderOf(first.owner), term: first.fence, ttl: first.ttl };
}

/**
 * The election's leader as it changes: first as it is (undefined: none),
 * then at every change of term, of value or from a leader to none and
 * back, until signal aborts. It looks again as soon as the driver tells
 * of a change of the key (changes: the memory driver, and the cluster's
 * long poll) and every options.every seconds besides, which also catches a
 * lease that ran out unseen. A failed look is retried at the next one: an
 * outage reports nothing, not "no leader". A leadership that began and
 * ended between two looks is not seen.
 */
export async function* observe(driver: LockDriver, key: string, options: ObserveOptions = {}): AsyncGenerator<Leader | undefined> {
  const everyMs = (options.every ?? 0.2) * 1000;
  const stop = new AbortController();
  const stopped = options.signal ? anySignal([options.signal, stop.signal]) : stop.signal;
  let changed = false; // told of a change since the last look began
  let resume = () => {};
  const wake = () => {
    changed = true;
    resume();
  };
  stopped.addEventListener("abort", wake, { once: true });
  // The driver's word of a change only wakes the loop; the look says what changed.
  const changes = driver.changes?.bind(driver);
  if (changes) {
    (async () => {
      for await (const _ of changes(key, stopped)) wake();
    })().catch(() => {});
  }
  try {
    let last: Leader | undefined;
    let first = true;
    while (!stopped.aborted) {
      changed = false;
      let cur: Leader | undefined;
      let seen = true;
      try {
        cur = await leaderOf(driver, key);
      } catch (err) {
        if (err instanceof LockInvalidError) throw err;
        seen = false;
      }
      if (seen && (first || cur?.term !== last?.term || cur?.value !== last?.value)) {
        first = false;
        last = cur;
        yield cur;
      }
      if (changed || stopped.aborted) continue;
      await new Promise<void>((r) => {
        const timer = setTimeout(r, everyMs);
        resume = () => {
          clearTimeout(timer);
          r();
        };
      });
      resume = () => {};
    }
  } finally {
    stop.abort();
  }
}
