// The memory driver and the facade over it: the seed's API and semantics,
// in process.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Lock, LockConfig, LockInvalidError, LockLostError, LockManager, LockNotAcquiredError, MemoryLockDriver, ManagedLock } from "../dist/esm/index.js";

const manager = () => new LockManager(new MemoryLockDriver(), { prefix: "t:", holder: "tester" });

test("Lock.try runs the callback once and releases; a held key is Lock.NotAcquired with status 409 and its holder", async () => {
  const m = manager();
  Lock.use(m);
  const out = await Lock.try("invoice:123", 10, async () => {
    const err = await Lock.try("invoice:123", 10, () => "twice").catch((e) => e);
    assert.ok(err instanceof Lock.NotAcquired && err instanceof LockNotAcquiredError);
    assert.equal(err.status, 409);
    assert.equal(err.key, "invoice:123");
    assert.equal(err.holder, "tester");
    assert.ok(err.holderTtl > 9 && err.holderTtl <= 10, `holderTtl ${err.holderTtl}`);
    return "once";
  });
  assert.equal(out, "once");
  assert.equal(await m.driver.exists("t:invoice:123"), false);
  await assert.rejects(Lock.try("k", 10, () => { throw new Error("boom"); }), /boom/);
  assert.equal(await m.driver.exists("t:k"), false, "released after the callback threw");
  Lock.use(undefined);
});

test("bad input is refused before the driver is asked", async () => {
  let asked = 0;
  const spy = new Proxy(new MemoryLockDriver(), { get: (d, p) => { asked++; return Reflect.get(d, p); } });
  const m = new LockManager(spy);
  for (const [key, ttl] of [["", 10], ["k", 0], ["k", -1], ["k", NaN], ["k".repeat(1025), 10], [[], 10], [["a", "a"], 10]]) {
    assert.throws(() => m.make(key, ttl), LockInvalidError, `key ${String(key).slice(0, 10)} ttl ${ttl}`);
    await assert.rejects(m.try(key, ttl, () => {}), LockInvalidError);
  }
  assert.throws(() => m.make("k", 1, { semaphore: 0 }), LockInvalidError);
  assert.throws(() => m.make("k", 1, { semaphore: 2, mode: "read" }), LockInvalidError);
  assert.equal(asked, 0);
});

test("waiters are served first come first served, with strictly increasing fences", async () => {
  const m = manager();
  const first = m.make("q", 10);
  assert.ok(await first.acquire());
  const order = [];
  const waits = [0, 1, 2, 3].map((i) => m.block("q", 10, (lock) => order.push([i, lock.fence]), { timeout: 10 }));
  // A try that arrives while others wait does not pass them.
  assert.equal(await m.make("q", 10).acquire(), false);
  await first.release();
  await Promise.all(waits);
  assert.deepEqual(order.map(([i]) => i), [0, 1, 2, 3]);
  const fences = [first.fence, ...order.map(([, f]) => f)];
  for (let i = 1; i < fences.length; i++) assert.ok(fences[i] > fences[i - 1], `fences ${fences}`);
});

test("Lock.block gives up after its timeout with LockNotAcquiredError", async () => {
  const m = manager();
  const held = m.make("b", 10);
  await held.acquire();
  const t0 = Date.now();
  await assert.rejects(m.block("b", 10, () => {}, { timeout: 0.1 }), LockNotAcquiredError);
  assert.ok(Date.now() - t0 >= 90);
});

test("a lease runs out: the next one takes the key, the first one's release is a no-op", async () => {
  const m = manager();
  const a = m.make("e", 0.05);
  assert.ok(await a.acquire());
  const b = m.make("e", 10);
  await b.block(2);
  assert.ok(b.fence > a.fence);
  assert.equal(await a.release(), false);
  assert.ok(await m.driver.exists("t:e"));
});

test("the callback's signal is aborted before the lease could run out, and the call ends in Lock.Lost", async () => {
  const m = manager();
  const err = await m
    .try("s", 0.3, async (lock, signal) => {
      await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
      assert.ok(Date.now() < lock.expiresAt.getTime(), "aborted after the estimated end of the lease");
      assert.ok(signal.reason instanceof LockLostError);
      return "done";
    })
    .catch((e) => e);
  assert.ok(err instanceof Lock.Lost);
  assert.equal(err.reason, "expired");
});

test("refresh keeps the lock past its TTL; a force-release from elsewhere aborts the signal with Lock.Lost (not-held)", async () => {
  const m = manager();
  let fencesSeen;
  const run = m.try(
    "r",
    0.3,
    async (lock, signal) => {
      fencesSeen = lock.fence;
      const t0 = Date.now();
      // Past two TTLs the lock is still held thanks to refresh.
      await new Promise((r) => setTimeout(r, 700));
      assert.ok(!signal.aborted && (await m.driver.exists("t:r")), `lost after ${Date.now() - t0}ms`);
      await m.make("r", 1).forceRelease();
      await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
      return "kept going";
    },
    { refresh: true, refreshEvery: 0.05 },
  );
  const err = await run.catch((e) => e);
  assert.ok(err instanceof LockLostError, String(err));
  assert.equal(err.reason, "not-held");
  assert.ok(fencesSeen > 0);
});

test("ManagedLock: acquire, refresh, release, await using", async () => {
  const m = manager();
  Lock.use(m);
  const lock = Lock.make("h", 10);
  Lock.use(undefined);
  assert.ok(lock instanceof ManagedLock);
  assert.equal(lock.isAcquired, false);
  assert.equal(lock.expiresAt, undefined);
  assert.ok(await lock.acquire());
  assert.ok(lock.isAcquired && lock.fence > 0 && lock.holder === "tester");
  assert.ok(lock.expiresAt.getTime() > Date.now());
  assert.ok(await lock.refresh());
  await lock.forceRelease();
  assert.equal(await lock.refresh(), false);
  assert.equal(lock.isAcquired, false);
  {
    const held = m.make("u", 10);
    await held.acquire();
    await held[Symbol.asyncDispose]();
  }
  assert.equal(await m.driver.exists("t:u"), false);
});

test("semaphores, read/write locks and several keys through the same calls' options", async () => {
  const m = manager();
  const s1 = m.make("sem", 10, { semaphore: 2 });
  const s2 = m.make("sem", 10, { semaphore: 2 });
  const s3 = m.make("sem", 10, { semaphore: 2 });
  assert.ok(await s1.acquire());
  assert.ok(await s2.acquire());
  assert.equal(await s3.acquire(), false);
  const r1 = m.make("rw", 10, { mode: "read" });
  const r2 = m.make("rw", 10, { mode: "read" });
  const w = m.make("rw", 10, { mode: "write" });
  assert.ok((await r1.acquire()) && (await r2.acquire()));
  assert.equal(await w.acquire(), false);
  const waiting = w.block(5);
  await r1.release();
  await r2.release();
  await waiting;
  assert.ok(w.isAcquired);
  const held = m.make("b", 10);
  await held.acquire();
  const err = await m.try(["a", "b", "c"], 10, () => {}).catch((e) => e);
  assert.ok(err instanceof LockNotAcquiredError);
  assert.equal(err.key, "b");
  assert.equal(await m.driver.exists("t:a"), false, "all or none");
  await held.release();
  const fences = await m.try(["a", "b", "c"], 10, (lock) => lock.fences);
  assert.equal(fences.length, 3);
});

test("an abort of the block's signal ends the wait", async () => {
  const m = manager();
  await m.make("x", 10).acquire();
  const ac = new AbortController();
  const p = m.block("x", 10, () => {}, { timeout: 10, signal: ac.signal });
  ac.abort(new Error("gave up"));
  await assert.rejects(p, /gave up/);
});

test("LockConfig applies the defaults and refuses what this package has not", () => {
  assert.deepEqual(LockConfig({}), { driver: "memory", prefix: "zerotal_lock:", cluster: undefined, holder: undefined });
  assert.equal(LockConfig({ driver: "cluster", cluster: { endpoints: ["a:1"] } }).prefix, "");
  assert.throws(() => LockConfig({ driver: "redis" }), LockInvalidError);
  assert.throws(() => LockConfig({ driver: "cluster" }), LockInvalidError);
});
