// The cluster driver against three real lockcluster processes: contention,
// waiting FIFO, expiry, refresh and loss, fences, bad input, then a killed
// leader and a cluster without quorum.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, test } from "node:test";
import {
  ClusterLockDriver,
  Lock,
  LockInvalidError,
  LockLostError,
  LockManager,
  LockNotAcquiredError,
  LockUnavailableError,
  configFromEnv,
} from "../dist/esm/index.js";
import { startCluster, until } from "./cluster.mjs";

let c;
const managers = [];
const manager = (holder = "ts-test", opts = {}) => {
  const m = new LockManager(new ClusterLockDriver({ endpoints: c.endpoints, token: c.token, timeout: 3, ...opts }), { holder });
  managers.push(m);
  return m;
};

before(async () => {
  c = await startCluster();
});
after(async () => {
  await c?.close();
});

test("contention: a held key is Lock.NotAcquired (409) naming its holder and how long it has left", async () => {
  const a = manager("worker-a");
  const b = manager("worker-b", { noStream: true }); // plain HTTP/1.1 beside the stream
  await a.try("invoice:1", 10, async () => {
    const err = await b.try("invoice:1", 10, () => {}).catch((e) => e);
    assert.ok(err instanceof Lock.NotAcquired, String(err));
    assert.equal(err.status, 409);
    assert.equal(err.key, "invoice:1");
    assert.equal(err.holder, "worker-a");
    assert.ok(err.holderTtl > 8 && err.holderTtl <= 10, `holderTtl ${err.holderTtl}`);
  });
  assert.equal(await b.driver.exists("invoice:1"), false);
});

test("waiting is first come first served on the leader, fences strictly increasing", async () => {
  const m = manager();
  const first = m.make("fifo", 10);
  assert.ok(await first.acquire());
  const order = [];
  const waits = [];
  for (let i = 0; i < 4; i++) {
    waits.push(m.block("fifo", 10, (lock) => order.push([i, lock.fence]), { timeout: 20 }));
    // The next waiter arrives after this one is queued.
    await until(5000, `waiter ${i} queued`, async () => ((await m.driver.get("fifo"))?.waiters ?? 0) > i);
  }
  await first.release();
  await Promise.all(waits);
  assert.deepEqual(order.map(([i]) => i), [0, 1, 2, 3]);
  const fences = [first.fence, ...order.map(([, f]) => f)];
  for (let i = 1; i < fences.length; i++) assert.ok(fences[i] > fences[i - 1], `fences ${fences}`);
});

test("a wait longer than one chunk keeps its place (keep_ms) and is served first", async () => {
  const m = manager("chunked", { waitChunk: 0.2 });
  const other = manager("other");
  const held = m.make("chunks", 10);
  await held.acquire();
  const first = m.block("chunks", 10, () => "first", { timeout: 10 });
  await until(5000, "the chunked waiter queued", async () => ((await m.driver.get("chunks"))?.waiters ?? 0) > 0);
  const second = other.block("chunks", 10, () => "second", { timeout: 10 });
  await until(5000, "the second waiter queued", async () => ((await m.driver.get("chunks"))?.waiters ?? 0) > 1);
  await new Promise((r) => setTimeout(r, 600)); // several chunks of the first waiter pass
  const order = [];
  await held.release();
  await Promise.all([first.then((v) => order.push(v)), second.then((v) => order.push(v))]);
  assert.deepEqual(order, ["first", "second"]);
});

test("a lease runs out on the cluster: another owner takes the key with a higher fence", async () => {
  const m = manager();
  const a = m.make("expiry", 0.2);
  assert.ok(await a.acquire());
  const b = m.make("expiry", 10);
  await b.block(5);
  assert.ok(b.fence > a.fence);
  assert.equal(await a.release(), false);
  await b.release();
});

test("refresh keeps a lock past its TTL; a force-release from another client aborts the signal with Lock.Lost", async () => {
  const m = manager();
  const other = manager("admin");
  const err = await m
    .try(
      "refresh",
      0.5,
      async (lock, signal) => {
        await new Promise((r) => setTimeout(r, 1200));
        assert.ok(!signal.aborted, "refresh did not keep the lock");
        assert.ok(await other.driver.exists("refresh"));
        await other.make("refresh", 1).forceRelease();
        await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
      },
      { refresh: true, refreshEvery: 0.1 },
    )
    .catch((e) => e);
  assert.ok(err instanceof LockLostError, String(err));
  assert.equal(err.reason, "not-held");
});

test("a lease lapsing while the holding process is stopped: the key goes to another, the holder learns it lost it", async () => {
  const child = spawn(process.execPath, [new URL("./holder-child.mjs", import.meta.url).pathname, "stall", c.endpoints.join(","), c.token], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (b) => (out += b));
  const exited = new Promise((r) => child.once("exit", r));
  try {
    await until(10000, "the child to hold the lock", () => out.includes("held "));
    const childFence = Number(/held (\d+)/.exec(out)[1]);
    process.kill(child.pid, "SIGSTOP");
    const m = manager();
    const fence = await m.block("stall", 10, (lock) => lock.fence, { timeout: 10 });
    assert.ok(fence > childFence);
    process.kill(child.pid, "SIGCONT");
    await until(10000, "the child to report the loss", () => out.includes("lost "));
    // Resumed, it finds its lease past (expired), or a refresh it had not
    // sent before the stop is refused (not-held).
    assert.match(out, /lost (expired|not-held)/);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(child.pid, "SIGCONT");
      child.kill("SIGKILL");
    }
    await exited;
  }
});

test("semaphores, read/write locks and several keys on the cluster", async () => {
  const m = manager();
  const s = [1, 2, 3].map(() => m.make("sem", 10, { semaphore: 2 }));
  assert.ok(await s[0].acquire());
  assert.ok(await s[1].acquire());
  assert.equal(await s[2].acquire(), false);
  const waiting = s[2].block(10);
  await s[0].release();
  await waiting;
  assert.ok(s[2].fence > s[1].fence);
  const r = m.make("rw", 10, { mode: "read" });
  const r2 = m.make("rw", 10, { mode: "read" });
  const w = m.make("rw", 10, { mode: "write" });
  assert.ok((await r.acquire()) && (await r2.acquire()));
  assert.equal(await w.acquire(), false);
  await r.release();
  await r2.release();
  assert.ok(await w.acquire());
  const fences = await m.try(["set:a", "set:b", "set:c"], 10, async (lock) => {
    const err = await m.try("set:b", 10, () => {}).catch((e) => e);
    assert.ok(err instanceof LockNotAcquiredError && err.key === "set:b");
    return lock.fences;
  });
  assert.equal(fences.length, 3);
});

test("bad input is refused before any request", async () => {
  let requests = 0;
  const spy = (...args) => {
    requests++;
    return fetch(...args);
  };
  const m = new LockManager(new ClusterLockDriver({ endpoints: c.endpoints, token: c.token, fetch: spy }));
  for (const [key, ttl] of [["", 10], ["k", 0], ["k", -5], ["é".repeat(513), 10], [Array(65).fill(0).map((_, i) => `k${i}`), 10]]) {
    await assert.rejects(m.try(key, ttl, () => {}), LockInvalidError);
    await assert.rejects(m.block(key, ttl, () => {}), LockInvalidError);
  }
  assert.equal(requests, 0);
});

test("configuration from the LOCKCLUSTER_* variables", async () => {
  const config = configFromEnv({ LOCKCLUSTER_ENDPOINTS: c.endpoints.join(","), LOCKCLUSTER_TOKEN: c.token });
  assert.equal(config.driver, "cluster");
  const m = LockManager.fromConfig(config);
  assert.equal(await m.try("env", 5, (lock) => lock.fence > 0), true);
  const wrong = LockManager.fromConfig(configFromEnv({ LOCKCLUSTER_ENDPOINTS: c.endpoints.join(","), LOCKCLUSTER_TOKEN: "wrong-token-0123456789" }));
  await assert.rejects(wrong.try("env", 5, () => {}), (e) => e.status === 401 && !(e instanceof LockNotAcquiredError));
});

test("changes(): a watcher is pushed every change of hands (GET /v1/watch), and a release within a round trip", async () => {
  const m = manager("watched");
  const ac = new AbortController();
  const it = m.driver.changes("watched", ac.signal);
  assert.equal((await it.next()).value, undefined, "free at first");
  const delays = [];
  for (let i = 0; i < 20; i++) {
    const lock = m.make("watched", 10);
    await lock.acquire();
    const held = (await it.next()).value;
    assert.equal(held?.fence, lock.fence);
    const t0 = performance.now();
    await lock.release();
    assert.equal((await it.next()).value, undefined);
    delays.push(performance.now() - t0);
  }
  ac.abort();
  assert.equal((await it.next()).done, true);
  delays.sort((a, b) => a - b);
  console.log(`# release seen by a watcher: p50 ${delays[10].toFixed(1)}ms, max ${delays[19].toFixed(1)}ms over 20`);
  assert.ok(delays[19] < 2000, `max ${delays[19]}ms`);
});

test("failover: a lock survives its leader's death, and calls go on to the new leader", async () => {
  const m = manager("before");
  const held = m.make("failover", 30);
  assert.ok(await held.acquire());
  const leader = await c.leader();
  await leader.kill();
  const other = manager("after");
  const err = await other.try("failover", 10, () => {}).catch((e) => e);
  assert.ok(err instanceof LockNotAcquiredError, String(err));
  assert.ok(await held.release());
  const fence = await other.try("failover", 10, (lock) => lock.fence);
  assert.ok(fence > held.fence, `fence ${fence} after ${held.fence}`);
});

test("outage is not contention: a cluster without quorum is Lock.Unavailable (503), never Lock.NotAcquired", async () => {
  const m = manager("outage", { timeout: 1.5 });
  const leader = await c.leader();
  await leader.kill();
  const t0 = Date.now();
  const err = await m.try("outage", 5, () => {}).catch((e) => e);
  assert.ok(err instanceof LockUnavailableError && err instanceof Lock.Unavailable, String(err));
  assert.equal(err.status, 503);
  assert.ok(Date.now() - t0 < 10000, `took ${Date.now() - t0}ms`);
});
