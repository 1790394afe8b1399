import { LockInvalidError } from "./errors.js";
import { holderOf } from "./owner.js";
import type { Claim, Holding, LockDriver, LockGrant, LockRequest } from "./types.js";

/** The most holders of a read side at once (drivers.MaxHolders). */
const MAX_HOLDERS = 1000;

/** The longest delay setTimeout takes. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One grant of a key. */
interface Grant {
  owner: string;
  fence: number;
  /** Date.now() ms, never past cap; Infinity while a set's wait that took the key still waits for others. */
  expires: number;
  /** The end of its hold cap (LockRequest.maxHold), Date.now() ms; Infinity: none (yet). */
  cap: number;
  /** The write side of an rwlock. */
  write: boolean;
}

interface Entry {
  claim: Claim; // kept while anyone holds or waits
  grants: Map<string, Grant>; // by owner, in the order granted (by fence)
  queue: Waiter[]; // first come, first served
}

/** A wait under way: the keys it took (held until the last comes) and those it still queues for. */
interface Waiter {
  req: LockRequest;
  fences: number[]; // by req.keys, set once the key is held
  took: Set<string>; // keys granted to this wait (not refreshed)
  left: number; // keys still queued for
  settle(g: LockGrant): void;
}

/**
 * The in-process driver, the default and the one for tests, with the
 * waiting rules of every backend (drivers/driverstest's Model, which
 * drives it through clients/ts/modelbridge): a key takes the claim of the
 * acquire that creates it and refuses another meanwhile; an acquire is let
 * in at once only when nobody waits for the key and it fits; waits queue
 * first come, first served, a set's wait taking its free keys and queuing
 * for the busy ones in one step; every new grant a fence higher than any
 * before; a refresh keeps its fence.
 */
export class MemoryLockDriver implements LockDriver {
  #table = new Map<string, Entry>();
  #waits = new Map<string, Waiter>(); // by owner
  #fence = 0;
  #watchers = new Map<string, Set<() => void>>(); // by key: changes() waiting for the next change
  #timer: ReturnType<typeof setTimeout> | undefined;

  async acquire(key: string, owner: string, ttlSeconds: number): Promise<boolean> {
    return (await this.claim({ keys: [key], owner, ttl: ttlSeconds, claim: { kind: "mutex" }, wait: 0 })).acquired;
  }

  claim(req: LockRequest): Promise<LockGrant> {
    if (req.signal?.aborted) return Promise.reject(req.signal.reason);
    try {
      this.#expire();
      const out = this.#take(req);
      if (!("waiter" in out)) return Promise.resolve(out);
      return this.#wait(req, out.waiter, out.busy);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async release(key: string, owner: string): Promise<boolean> {
    this.#expire();
    const e = this.#table.get(key);
    if (!e?.grants.delete(owner)) return false;
    this.#admit(key);
    return true;
  }

  /** Ends every grant of key; a set's wait that had taken it lets go of the rest and ends not acquired. */
  async forceRelease(key: string): Promise<void> {
    const e = this.#table.get(key);
    if (!e) return;
    const broken: Waiter[] = [];
    for (const owner of e.grants.keys()) {
      const w = this.#waits.get(owner);
      if (w?.took.delete(key)) broken.push(w);
    }
    e.grants.clear();
    this.#admit(key);
    for (const w of broken) {
      this.#end(w);
      w.settle({ acquired: false, fences: [], busy: { key, holder: "", ttl: undefined } });
    }
  }

  async exists(key: string): Promise<boolean> {
    this.#expire();
    return (this.#table.get(key)?.grants.size ?? 0) > 0;
  }

  /** The key's claim, holders by fence and waiters in order; undefined when nobody holds it. */
  async inspect(key: string): Promise<Holding | undefined> {
    this.#expire();
    const e = this.#table.get(key);
    if (!e || e.grants.size === 0) return undefined;
    const now = Date.now();
    return {
      claim: e.claim,
      holders: [...e.grants.values()].map((g) => ({ owner: g.owner, fence: g.fence, ttl: Math.max(0, (g.expires - now) / 1000), write: g.write })),
      waiters: e.queue.map((w) => ({ owner: w.req.owner, write: isWrite(w.req.claim) })),
    };
  }

  async extend(key: string, owner: string, ttlSeconds: number): Promise<boolean> {
    this.#expire();
    const g = this.#table.get(key)?.grants.get(owner);
    if (!g) return false;
    g.expires = Math.min(Date.now() + ttlSeconds * 1000, g.cap);
    this.#schedule();
    return true;
  }

  /** Yields at every grant and every end of a grant of key (an expiry as this driver notices it), until signal aborts. */
  async *changes(key: string, signal?: AbortSignal): AsyncGenerator<void> {
    while (!signal?.aborted) {
      await new Promise<void>((resolve) => {
        const set = this.#watchers.get(key) ?? new Set();
        this.#watchers.set(key, set);
        const wake = () => {
          set.delete(wake);
          if (set.size === 0 && this.#watchers.get(key) === set) this.#watchers.delete(key);
          signal?.removeEventListener("abort", wake);
          resolve();
        };
        set.add(wake);
        signal?.addEventListener("abort", wake, { once: true });
      });
      if (!signal?.aborted) yield;
    }
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * One acquire's step: refreshes what owner holds, takes what is free and
   * queues for the rest (with a wait), or takes nothing and names the first
   * key in the way. A claim of another kind than a key's, or of the other
   * side of an rwlock owner holds, throws LockInvalidError.
   */
  #take(req: LockRequest): LockGrant | { waiter: Waiter; busy: LockGrant } {
    if (this.#waits.has(req.owner)) throw new LockInvalidError("owner", "already waits");
    const write = isWrite(req.claim);
    const plan: ("refresh" | "take" | "busy")[] = [];
    let first = -1;
    req.keys.forEach((key, i) => {
      const e = this.#table.get(key);
      const held = e?.grants.get(req.owner);
      if (!e) plan.push("take");
      else if (!sameKind(e.claim, req.claim)) throw new LockInvalidError("claim", `${JSON.stringify(key)} is held as ${describe(e.claim)}; this acquire is for ${describe(req.claim)}`);
      else if (held && held.write !== write) throw new LockInvalidError("claim", `owner holds the other side of ${JSON.stringify(key)}; release it first`);
      else if (held) plan.push("refresh");
      else if (e.queue.length === 0 && fits(e, write)) plan.push("take");
      else {
        plan.push("busy");
        if (first < 0) first = i;
      }
    });
    if (first >= 0 && req.wait <= 0) return { acquired: false, fences: [], busy: this.#busy(req.keys[first]!, req.claim) };
    // A wait holds what it takes with no deadline until its last key comes.
    const expires = first >= 0 ? Infinity : Date.now() + req.ttl * 1000;
    const w: Waiter | undefined = first >= 0 ? { req, fences: [], took: new Set(), left: 0, settle: () => {} } : undefined;
    const fences = req.keys.map((key, i) => {
      switch (plan[i]) {
        case "refresh": {
          const g = this.#table.get(key)!.grants.get(req.owner)!;
          g.expires = Math.min(expires, g.cap); // the first grant's cap stays
          return g.fence;
        }
        case "take":
          w?.took.add(key);
          return this.#grant(key, req.owner, req, expires);
      }
      this.#table.get(key)!.queue.push(w!);
      w!.left++;
      return 0;
    });
    this.#schedule();
    if (!w) return { acquired: true, fences };
    w.fences = fences;
    this.#waits.set(req.owner, w);
    return { waiter: w, busy: { acquired: false, fences: [], busy: this.#busy(req.keys[first]!, req.claim) } };
  }

  /** Waits until w is granted, its time runs out (not acquired, busy as then) or req.signal aborts (throws its reason). */
  #wait(req: LockRequest, w: Waiter, busy: LockGrant): Promise<LockGrant> {
    return new Promise<LockGrant>((resolve, reject) => {
      const done = (settle: () => void) => {
        clearTimeout(timer);
        req.signal?.removeEventListener("abort", onAbort);
        w.settle = () => {};
        settle();
      };
      w.settle = (g) => done(() => resolve(g));
      // A wait longer than a timer can count (24.8 days) has no end but its signal.
      const ms = req.wait * 1000;
      const timer = ms > MAX_TIMER_MS ? undefined : setTimeout(() => {
        this.#expire(); // a lapse due now may let it in
        if (this.#waits.get(req.owner) !== w) return;
        const key = req.keys.find((k) => this.#table.get(k)?.queue.includes(w));
        this.#end(w);
        done(() => resolve(key ? { acquired: false, fences: [], busy: this.#busy(key, req.claim) } : busy));
      }, ms);
      const onAbort = () => {
        if (this.#waits.get(req.owner) === w) this.#end(w);
        done(() => reject(req.signal?.reason));
      };
      req.signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Adds a new grant of key for req, with the next fence, capped unless it has no deadline yet (a set's wait's key, whose cap starts with its TTL). */
  #grant(key: string, owner: string, req: LockRequest, expires: number): number {
    const { claim } = req;
    let e = this.#table.get(key);
    if (!e) this.#table.set(key, (e = { claim: claim.kind === "rwlock" ? { kind: "rwlock", write: false } : claim, grants: new Map(), queue: [] }));
    const fence = ++this.#fence;
    const g: Grant = { owner, fence, expires, cap: Infinity, write: isWrite(claim) };
    if (expires !== Infinity) capFrom(g, req.maxHold);
    e.grants.set(owner, g);
    this.#changed(key);
    return fence;
  }

  /** What a refused acquire of key is told: the holder whose end would let it in (drivers.Claim.InTheWay). */
  #busy(key: string, claim: Claim): NonNullable<LockGrant["busy"]> {
    const e = this.#table.get(key);
    let b: Grant | undefined;
    const last = isWrite(claim); // a writer waits for every holder; a slot or a read for the first to go
    for (const g of e?.grants.values() ?? []) {
      if (!b) b = g;
      else if ((g.expires > b.expires || (g.expires === b.expires && g.fence > b.fence)) === last) b = g;
    }
    if (!b) return { key, holder: "", ttl: undefined };
    return { key, holder: holderOf(b.owner), ttl: Number.isFinite(b.expires) ? Math.max(0, (b.expires - Date.now()) / 1000) : undefined };
  }

  /** Withdraws w: its places are given up, what it took is let go, what its owner held before starts its TTL again. */
  #end(w: Waiter): void {
    const { owner, keys, ttl } = w.req;
    this.#waits.delete(owner);
    for (const key of keys) {
      const e = this.#table.get(key);
      if (!e) continue;
      const i = e.queue.indexOf(w);
      const g = e.grants.get(owner);
      if (i >= 0) e.queue.splice(i, 1);
      else if (g && w.took.has(key)) e.grants.delete(owner);
      else if (g && g.expires === Infinity) g.expires = Math.min(Date.now() + ttl * 1000, g.cap);
      else continue;
      this.#admit(key);
    }
    this.#schedule();
  }

  /** Tells key's watchers that its holders may have changed. */
  #changed(key: string): void {
    const set = this.#watchers.get(key);
    if (set) for (const wake of [...set]) wake();
  }

  /** After a grant of key ended (or a waiter left): lets waiters in from the head of its queue while they fit, and forgets key once nobody holds or waits for it. */
  #admit(key: string): void {
    this.#changed(key);
    const e = this.#table.get(key);
    if (!e) return;
    while (e.queue.length > 0 && fits(e, isWrite(e.queue[0]!.req.claim))) {
      const w = e.queue.shift()!;
      w.left--;
      const expires = w.left === 0 ? Date.now() + w.req.ttl * 1000 : Infinity;
      w.fences[w.req.keys.indexOf(key)] = this.#grant(key, w.req.owner, w.req, expires);
      w.took.add(key);
      if (w.left === 0) this.#complete(w);
    }
    if (e.grants.size === 0 && e.queue.length === 0) this.#table.delete(key);
    this.#schedule();
  }

  /** Ends w granted: every key it holds starts its TTL now, and every key it took its cap. */
  #complete(w: Waiter): void {
    this.#waits.delete(w.req.owner);
    const expires = Date.now() + w.req.ttl * 1000;
    for (const key of w.req.keys) {
      const g = this.#table.get(key)?.grants.get(w.req.owner);
      if (!g || g.expires !== Infinity) continue;
      g.expires = Math.min(expires, g.cap);
      if (w.took.has(key) && g.cap === Infinity) capFrom(g, w.req.maxHold);
    }
    w.settle({ acquired: true, fences: w.fences });
  }

  /** Ends every grant whose lease has run out, earliest first, letting the waiters behind each in. */
  #expire(): void {
    const now = Date.now();
    const due: [string, Grant][] = [];
    for (const [key, e] of this.#table) for (const g of e.grants.values()) if (g.expires <= now) due.push([key, g]);
    due.sort(([, a], [, b]) => a.expires - b.expires || a.fence - b.fence);
    for (const [key, g] of due) {
      const e = this.#table.get(key);
      if (e?.grants.get(g.owner) !== g) continue;
      e.grants.delete(g.owner);
      this.#admit(key);
    }
  }

  /** Wakes the table at the next expiry of a key someone waits for, so that a lapsed lease lets the next one in. */
  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    let next = Infinity;
    for (const e of this.#table.values()) {
      if (e.queue.length === 0) continue;
      for (const g of e.grants.values()) next = Math.min(next, g.expires);
    }
    if (next === Infinity) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#expire();
      this.#schedule();
    }, Math.max(0, next - Date.now()) + 1);
    (this.#timer as { unref?: () => void }).unref?.();
  }
}

/** Starts g's cap of maxHold seconds now (0 or undefined: none) and clamps its lease to it. */
function capFrom(g: Grant, maxHold: number | undefined): void {
  if (maxHold && maxHold > 0) g.cap = Date.now() + maxHold * 1000;
  g.expires = Math.min(g.expires, g.cap);
}

function isWrite(c: Claim): boolean {
  return c.kind === "rwlock" && c.write;
}

function sameKind(a: Claim, b: Claim): boolean {
  return a.kind === b.kind && (a.kind !== "semaphore" || a.limit === (b as { limit: number }).limit);
}

function describe(c: Claim): string {
  return c.kind === "semaphore" ? `a semaphore of ${c.limit}` : c.kind === "rwlock" ? "a read/write lock" : "a mutex";
}

/** Whether one more grant of the given side fits beside e's holders. */
function fits(e: Entry, write: boolean): boolean {
  const n = e.grants.size;
  if (e.claim.kind === "semaphore") return n < e.claim.limit;
  if (e.claim.kind === "mutex" || write) return n === 0;
  if (n >= MAX_HOLDERS) return false;
  for (const g of e.grants.values()) if (g.write) return false;
  return true;
}
