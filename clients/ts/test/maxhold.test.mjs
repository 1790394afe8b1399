// A cap on total hold time (the maxHold option, in seconds): the backend
// ends a grant at its cap however it is refreshed and hands the key on;
// the callback's signal is aborted a margin before, with Lock.Lost of
// reason "max-hold". On the memory driver and three real lockcluster
// processes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LockInvalidError, LockLostError, LockManager, MemoryLockDriver } from "../dist/esm/index.js";
import { until } from "./cluster.mjs";
import { clusterManagers } from "./clustermanagers.mjs";

/** A holder that refreshes key every 50ms with a cap of 0.6s, and a waiter that gets it at the cap. */
async function capEndsTheGrant(m, key) {
  const lock = m.make(key, 10, { maxHold: 0.6 });
  const t0 = Date.now();
  assert.ok(await lock.acquire());
  const first = lock.fence;
  assert.ok(lock.maxHoldAt.getTime() - t0 >= 600, "the cap is counted from the sending");
  assert.equal(lock.expiresAt.getTime(), lock.maxHoldAt.getTime(), "the lease ends at the cap");
  const next = m.block(key, 10, (l) => [Date.now() - t0, l.fence], { timeout: 10 });
  // The holder's refreshes succeed until the cap, and are refused after it.
  let refused;
  await until(10000, "a refresh refused at the cap", async () => {
    if (!(await lock.refresh())) refused = Date.now() - t0;
    return refused !== undefined || (await new Promise((r) => setTimeout(r, 50)));
  });
  const [at, fence] = await next;
  assert.ok(refused >= 550, `refresh refused after ${refused}ms, before the cap of 600ms`);
  assert.ok(at >= 550 && at < 5000, `the waiter got the key after ${at}ms; the cap is 600ms`);
  assert.ok(fence > first, `fences ${first}, ${fence}`);
}

/** The callback's signal aborts before the cap with Lock.Lost "max-hold", refreshes notwithstanding. */
async function callbackToldBeforeTheCap(m, key) {
  const t0 = Date.now();
  let aborted;
  const err = await m
    .block(
      key,
      1,
      async (lock, signal) => {
        await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
        aborted = Date.now() - t0;
        assert.ok(signal.reason instanceof LockLostError);
      },
      { maxHold: 0.8, refresh: true, refreshEvery: 0.05 },
    )
    .catch((e) => e);
  assert.ok(err instanceof LockLostError, String(err));
  assert.equal(err.reason, "max-hold");
  assert.ok(aborted < 800, `told after ${aborted}ms, not before the cap of 800ms`);
  assert.equal(await m.driver.exists(key), false, "released after the loss");
}

test("memory: a grant ends at its cap however it is refreshed, and the waiter gets the key", async () => {
  await capEndsTheGrant(new LockManager(new MemoryLockDriver()), "cap");
});

test("memory: the callback is told before the cap, with Lock.Lost of reason max-hold", async () => {
  await callbackToldBeforeTheCap(new LockManager(new MemoryLockDriver()), "told");
});

test("a bad maxHold is refused before any request", async () => {
  const m = new LockManager(new MemoryLockDriver());
  for (const maxHold of [0, -1, NaN, Infinity, 8 * 24 * 3600]) {
    assert.throws(() => m.make("k", 1, { maxHold }), LockInvalidError, String(maxHold));
  }
});

const cluster = clusterManagers();

test("cluster: a grant ends at its cap however it is refreshed, and the waiter gets the key", async () => {
  await capEndsTheGrant(cluster(), "cap");
});

test("cluster: the callback is told before the cap, with Lock.Lost of reason max-hold", async () => {
  await callbackToldBeforeTheCap(cluster(), "told");
});
