import { LockInvalidError, LockNotAcquiredError } from "./errors.js";
import { Answer, notAcquired, sleep, Transport, type TransportOptions } from "./transport.js";
import type { Claim, Holding, LockDriver, LockGrant, LockRequest } from "./types.js";
import { checkKey, millis } from "./validate.js";
import type {
  AcquireRequest,
  AcquireResponse,
  ExtendRequest,
  ExtendResponse,
  ForceReleaseRequest,
  Holder,
  Lock as LockInfo,
  ReleaseRequest,
  ReleaseResponse,
  Status,
  WatchQuery,
} from "./wire.gen.js";
import { limits } from "./wire.gen.js";

/** The cluster driver's options: the transport's, and how a long wait is split. */
export interface ClusterOptions extends TransportOptions {
  /** The longest wait of one request, in seconds: a longer wait is sent as several, each keeping its place in the queue for the next. Default 10. */
  waitChunk?: number | undefined;
}

/** The wait_ms of one long poll of a key: under the node's cap, so that a dead connection is noticed within it. */
const watchWaitMs = Math.min(20_000, limits["WatchQuery.wait_ms.maximum"]);

/** The holders of lock by their fences, ascending, comma separated: what a watch's seen names (api.HoldersSeen). */
function holdersSeen(lock: LockInfo | undefined): string {
  if (!lock) return "";
  const fences = lock.holders?.length ? lock.holders.map((h) => h.fence).sort((a, b) => a - b) : [lock.fence];
  return fences.join(",");
}

/** How long a chunk that is not the last keeps its places for the next one (keep_ms). */
const keepMs = Math.min(2000, limits["AcquireRequest.keep_ms.maximum"]);

/**
 * The driver of a lockcluster: replicated (raft), fenced, first come first
 * served, over the nodes' HTTP API (/v1). Waits happen on the leader, in
 * the key's queue, not by polling.
 */
export class ClusterLockDriver implements LockDriver {
  readonly #t: Transport;
  readonly #chunkMs: number;

  constructor(opts: ClusterOptions) {
    this.#t = new Transport(opts);
    this.#chunkMs = (opts.waitChunk ?? 10) * 1000;
  }

  async acquire(key: string, owner: string, ttlSeconds: number): Promise<boolean> {
    return (await this.claim({ keys: [key], owner, ttl: ttlSeconds, claim: { kind: "mutex" }, wait: 0 })).acquired;
  }

  async claim(req: LockRequest): Promise<LockGrant> {
    if (req.wait <= 0) return this.#once(req, 0, 0);
    // A wait in chunks, each but the last keeping its places, so that the
    // wait stays first come first served; a 409 at the end of a chunk is
    // sent again while time remains.
    const deadline = Date.now() + req.wait * 1000;
    for (;;) {
      const left = deadline - Date.now();
      const wait = left < 2 ? 0 : Math.min(left, this.#chunkMs);
      const keep = left > wait ? keepMs : 0;
      let g: LockGrant;
      try {
        g = await this.#once(req, wait, keep);
      } catch (err) {
        if (req.signal?.aborted) this.#abandon(req);
        throw err;
      }
      if (g.acquired || Date.now() >= deadline || wait === 0) return g;
    }
  }

  /** Releases in the background what a wait the caller gave up may have been granted meanwhile. */
  #abandon(req: LockRequest): void {
    for (const key of req.keys) this.release(key, req.owner).catch(() => {});
  }

  async #once(req: LockRequest, waitMs: number, keepMs: number): Promise<LockGrant> {
    const body: AcquireRequest = { owner: req.owner, ttl_ms: millis(req.ttl) };
    if (req.keys.length === 1) body.key = req.keys[0]!;
    else body.keys = req.keys;
    if (waitMs > 0) body.wait_ms = Math.round(waitMs);
    if (keepMs > 0) body.keep_ms = keepMs;
    if (req.claim.kind === "semaphore") body.semaphore = req.claim.limit;
    if (req.claim.kind === "rwlock") body.mode = req.claim.write ? "write" : "read";
    if (req.maxHold) body.max_hold_ms = millis(req.maxHold);
    const a = await this.#t.send<AcquireResponse>({
      op: "acquire",
      method: "POST",
      path: "/v1/acquire",
      body,
      key: req.keys.join(","),
      waitMs,
      signal: req.signal,
    });
    if (a instanceof Answer) {
      if (a.status !== 409) throw new LockInvalidError("request", a.body.message);
      const na: LockNotAcquiredError = notAcquired(a, req.keys[0]!);
      return { acquired: false, fences: [], busy: { key: na.key, holder: na.holder, ttl: na.holderTtl } };
    }
    if (body.key !== undefined) return { acquired: true, fences: [a.fence] };
    const locks = a.locks ?? [];
    if (locks.length !== req.keys.length || locks.some((l, i) => l.key !== req.keys[i])) {
      throw new Error(`acquire of ${req.keys.length} keys answered with ${JSON.stringify(locks)}`);
    }
    return { acquired: true, fences: locks.map((l) => l.fence) };
  }

  async release(key: string, owner: string): Promise<boolean> {
    const body: ReleaseRequest = { key, owner };
    const a = await this.#t.send<ReleaseResponse>({ op: "release", method: "POST", path: "/v1/release", body, key });
    return !(a instanceof Answer) && a.released;
  }

  async extend(key: string, owner: string, ttlSeconds: number): Promise<boolean> {
    const body: ExtendRequest = { key, owner, ttl_ms: millis(ttlSeconds) };
    const a = await this.#t.send<ExtendResponse>({ op: "extend", method: "POST", path: "/v1/extend", body, key });
    return !(a instanceof Answer) && a.extended;
  }

  async forceRelease(key: string): Promise<void> {
    const body: ForceReleaseRequest = { key };
    await this.#t.send<ReleaseResponse>({ op: "force-release", method: "POST", path: "/v1/force-release", body, key });
  }

  async exists(key: string): Promise<boolean> {
    return (await this.get(key)) !== undefined;
  }

  /** The key's holders and queue (GET /v1/lock), undefined when nobody holds it. */
  async get(key: string): Promise<LockInfo | undefined> {
    const a = await this.#t.send<LockInfo>({ op: "get", method: "GET", path: "/v1/lock", query: { key }, key });
    return a instanceof Answer ? undefined : a;
  }

  /** The key's holders and queue as the memory driver tells them (inspect), from GET /v1/lock. */
  async inspect(key: string): Promise<Holding | undefined> {
    const l = await this.get(key);
    if (!l) return undefined;
    const claim: Claim = l.kind === "semaphore" ? { kind: "semaphore", limit: l.limit ?? 0 } : l.kind === "rwlock" ? { kind: "rwlock", write: false } : { kind: "mutex" };
    const holders: Holder[] = l.holders?.length ? l.holders : [{ owner: l.owner, fence: l.fence, remaining_ms: l.remaining_ms }];
    return {
      claim,
      holders: holders.map((h) => ({ owner: h.owner, fence: h.fence, ttl: h.remaining_ms / 1000, write: h.mode === "write" })),
      waiters: (l.queue ?? []).map((w) => ({ owner: w.owner, write: w.mode === "write" })),
    };
  }

  /**
   * The key as it changes hands: first as it is, then at every grant,
   * release, expiry or hand-off, as the node's long poll (GET /v1/watch)
   * tells, until signal aborts; undefined while it is free. Pushed, not
   * polled: an observer or an election's follower learns of a release
   * within a round trip. A reader that falls behind gets every state in
   * order; a change and its undoing between two polls may be seen as none.
   */
  async *changes(key: string, signal?: AbortSignal): AsyncGenerator<LockInfo | undefined> {
    checkKey(key);
    let seen = "-"; // names no holders: the first poll answers at once
    while (!signal?.aborted) {
      let a: LockInfo | Answer;
      const start = Date.now();
      try {
        const q: WatchQuery = { key, seen, wait_ms: watchWaitMs };
        a = await this.#t.send<LockInfo>({ op: "watch", method: "GET", path: "/v1/watch", query: { ...q, wait_ms: String(q.wait_ms) }, key, waitMs: watchWaitMs, signal });
      } catch (err) {
        if (signal?.aborted) return;
        throw err;
      }
      const lock = a instanceof Answer ? undefined : a;
      const now = holdersSeen(lock);
      if (now !== seen) {
        seen = now;
        yield lock;
      } else if (Date.now() - start < watchWaitMs / 2) {
        // Unchanged, and answered without waiting: a node that has no watch
        // (an older release answers 404, as for a free key). Ask again a
        // second later, as a poll would.
        await sleep(1000, signal).catch(() => {});
      }
    }
  }

  /** The status of the node that answers (GET /v1/status). */
  status(): Promise<Status> {
    return this.#t.status();
  }
}
