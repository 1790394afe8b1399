import type { Claim, LockDriver, LockGrant, LockRequest } from "./types.js";
import { holderOf } from "./owner.js";

/** One grant of a key. */
interface Grant {
  owner: string;
  fence: number;
  expires: number; // Date.now() ms
  write: boolean; // exclusive side of an rwlock, or a mutex
}

interface Entry {
  claim: Claim;
  grants: Map<string, Grant>;
  queue: Waiter[]; // first come, first served
}

interface Waiter {
  req: LockRequest;
  resolve(grant: LockGrant): void;
}

/**
 * The in-process driver, the default and the one for tests: first come,
 * first served (an acquire does not pass a queued waiter), fenced (every
 * grant a number higher than any before in this driver), semaphores,
 * read/write locks and several keys at once, like the cluster.
 */
export class MemoryLockDriver implements LockDriver {
  #table = new Map<string, Entry>();
  #fence = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  async acquire(key: string, owner: string, ttlSeconds: number): Promise<boolean> {
    return (await this.claim({ keys: [key], owner, ttl: ttlSeconds, claim: { kind: "mutex" }, wait: 0 })).acquired;
  }

  claim(req: LockRequest): Promise<LockGrant> {
    this.#expire();
    const now = this.#grant(req, false);
    if (now.acquired || req.wait <= 0) return Promise.resolve(now);
    return new Promise<LockGrant>((resolve, reject) => {
      // The pump resolves a waiter it admitted and goes on itself; a
      // timeout or abort lets the ones behind it move up.
      const w: Waiter = { req, resolve: (g) => done(() => resolve(g), false) };
      const timer = setTimeout(() => done(() => resolve(this.#grant(req, false)), true), req.wait * 1000);
      const onAbort = () => done(() => reject(req.signal?.reason), true);
      const done = (settle: () => void, pump: boolean) => {
        clearTimeout(timer);
        req.signal?.removeEventListener("abort", onAbort);
        this.#leave(w);
        settle();
        if (pump) this.#pump();
      };
      if (req.signal?.aborted) return onAbort();
      req.signal?.addEventListener("abort", onAbort, { once: true });
      for (const k of req.keys) this.#entry(k, req.claim).queue.push(w);
      this.#pump();
      this.#schedule();
    });
  }

  async release(key: string, owner: string): Promise<boolean> {
    this.#expire();
    const e = this.#table.get(key);
    const ok = e?.grants.delete(owner) ?? false;
    this.#tidy(key);
    this.#pump();
    return ok;
  }

  async forceRelease(key: string): Promise<void> {
    this.#table.get(key)?.grants.clear();
    this.#tidy(key);
    this.#pump();
  }

  async exists(key: string): Promise<boolean> {
    this.#expire();
    return (this.#table.get(key)?.grants.size ?? 0) > 0;
  }

  async extend(key: string, owner: string, ttlSeconds: number): Promise<boolean> {
    this.#expire();
    const g = this.#table.get(key)?.grants.get(owner);
    if (!g) return false;
    g.expires = Date.now() + ttlSeconds * 1000;
    this.#schedule();
    return true;
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #entry(key: string, claim: Claim): Entry {
    let e = this.#table.get(key);
    if (!e) this.#table.set(key, (e = { claim, grants: new Map(), queue: [] }));
    return e;
  }

  /** Grants req now if every key admits it (waiting: when it is first in each queue it is in), all or none. */
  #grant(req: LockRequest, queued: boolean): LockGrant {
    const write = req.claim.kind === "mutex" || (req.claim.kind === "rwlock" && req.claim.write);
    for (const key of req.keys) {
      const e = this.#table.get(key);
      if (!e || e.grants.has(req.owner)) continue; // free, or a refresh of owner's grant
      const ahead = queued ? e.queue.findIndex((w) => w.req === req) > 0 : e.queue.length > 0;
      if (ahead || !admits(e, req.claim, write)) {
        const first = [...e.grants.values()].sort((a, b) => a.expires - b.expires)[0];
        return {
          acquired: false,
          fences: [],
          busy: { key, holder: first ? holderOf(first.owner) : "", ttl: first ? Math.max(0, (first.expires - Date.now()) / 1000) : undefined },
        };
      }
    }
    const expires = Date.now() + req.ttl * 1000;
    const fences = req.keys.map((key) => {
      const e = this.#entry(key, req.claim);
      const g = e.grants.get(req.owner);
      if (g) {
        g.expires = expires;
        return g.fence;
      }
      if (e.grants.size === 0) e.claim = req.claim;
      const fence = ++this.#fence;
      e.grants.set(req.owner, { owner: req.owner, fence, expires, write });
      return fence;
    });
    this.#schedule();
    return { acquired: true, fences };
  }

  #leave(w: Waiter): void {
    for (const k of w.req.keys) {
      const e = this.#table.get(k);
      if (!e) continue;
      const i = e.queue.indexOf(w);
      if (i >= 0) e.queue.splice(i, 1);
      this.#tidy(k);
    }
  }

  /** Admits the waiters that can go now, in their order of arrival. */
  #pump(): void {
    for (let progress = true; progress; ) {
      progress = false;
      const seen = new Set<Waiter>();
      for (const e of [...this.#table.values()]) {
        for (const w of [...e.queue]) {
          if (seen.has(w)) continue;
          seen.add(w);
          const g = this.#grant(w.req, true);
          if (g.acquired) {
            w.resolve(g);
            progress = true;
          }
        }
      }
    }
  }

  #expire(): void {
    const now = Date.now();
    for (const [key, e] of this.#table) {
      for (const [owner, g] of e.grants) if (g.expires <= now) e.grants.delete(owner);
      this.#tidy(key);
    }
  }

  #tidy(key: string): void {
    const e = this.#table.get(key);
    if (e && e.grants.size === 0 && e.queue.length === 0) this.#table.delete(key);
  }

  /** Wakes the table at the next expiry while anyone waits, so a lapsed lease lets the next one in. */
  #schedule(): void {
    clearTimeout(this.#timer);
    let next = Infinity;
    for (const e of this.#table.values()) {
      if (e.queue.length === 0) continue;
      for (const g of e.grants.values()) next = Math.min(next, g.expires);
    }
    if (next === Infinity) return;
    this.#timer = setTimeout(() => {
      this.#expire();
      this.#pump();
      this.#schedule();
    }, Math.max(0, next - Date.now()) + 1);
    (this.#timer as { unref?: () => void }).unref?.();
  }
}

/** Whether a key held as e admits one more grant of claim. */
function admits(e: Entry, claim: Claim, write: boolean): boolean {
  if (e.grants.size === 0) return true;
  if (claim.kind !== e.claim.kind) return false;
  switch (claim.kind) {
    case "mutex":
      return false;
    case "semaphore":
      return e.grants.size < (e.claim.kind === "semaphore" ? e.claim.limit : claim.limit);
    case "rwlock":
      return !write && [...e.grants.values()].every((g) => !g.write);
  }
}
