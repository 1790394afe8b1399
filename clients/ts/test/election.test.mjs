// Leader election through the lock calls (Lock.block with { campaign }),
// Lock.leader and Lock.observe, on the memory driver and on three real
// lockcluster processes: candidates lead in turn, the term is the fence
// and grows, an observer is told of each leader, a resigned leader is
// followed at once, a killed one once its lease runs out, a lost
// leadership aborts the callback's signal.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { Lock, LockInvalidError, LockLostError, LockManager, MAX_VALUE_BYTES, MemoryLockDriver } from "../dist/esm/index.js";
import { until } from "./cluster.mjs";
import { clusterManagers } from "./clustermanagers.mjs";

/** A leadership held until its resign() is called; term is its fence once it leads. */
function candidate(m, name, value, ttl = 5) {
  let resign;
  const resigned = new Promise((r) => (resign = r));
  const c = { value, term: 0, signal: undefined, resign: () => resign() };
  c.done = m.block(
    name,
    ttl,
    async (lock, signal) => {
      c.term = lock.fence;
      c.signal = signal;
      await Promise.race([resigned, new Promise((r) => signal.addEventListener("abort", r, { once: true }))]);
    },
    { campaign: value },
  );
  return c;
}

/** Collects what observe yields until stop(). */
function observer(m, name) {
  const ac = new AbortController();
  const seen = [];
  const done = (async () => {
    for await (const l of m.observe(name, { signal: ac.signal })) seen.push(l ? `${l.value}@${l.term}` : "none");
  })();
  return { seen, stop: () => (ac.abort(), done) };
}

/** The election rules on manager a (and b, another client of the same backend). */
async function leadInTurn(a, b, name) {
  const obs = observer(b, name);
  try {
    await until(5000, "the observer's first look", () => obs.seen.length > 0);
    assert.deepEqual(obs.seen, ["none"]);
    const first = candidate(a, name, "host-a");
    await until(5000, "host-a to lead", async () => first.term > 0 && (await b.leader(name))?.value === "host-a");
    const second = candidate(b, name, "host-b");
    await until(5000, "host-b to queue", async () => ((await a.driver.inspect(a.prefix + name))?.waiters.length ?? 0) === 1);
    const leader = await b.leader(name);
    assert.equal(leader.term, first.term);
    assert.ok(leader.ttl > 0 && leader.ttl <= 5, `ttl ${leader.ttl}`);
    first.resign();
    await first.done;
    // The backend names host-b as soon as it grants; host-b's callback (which
    // records the term) runs once that answer is back at its client.
    await until(5000, "host-b to lead once host-a resigned", async () => second.term > 0 && (await a.leader(name))?.value === "host-b");
    assert.ok(second.term > first.term, `terms ${first.term}, ${second.term}`);
    await until(5000, "the observer to see host-b", () => obs.seen.includes(`host-b@${second.term}`));
    second.resign();
    await second.done;
    await until(5000, "the observer to see nobody lead", () => obs.seen.at(-1) === "none");
    assert.deepEqual(obs.seen, ["none", `host-a@${first.term}`, `host-b@${second.term}`, "none"]);
    assert.equal(await a.leader(name), undefined);
  } finally {
    await obs.stop();
  }
}

/** A leadership whose lock is force-released: the callback's signal aborts with Lock.Lost, not-held. */
async function lostLeadership(a, b, name) {
  const c = candidate(a, name, "host-a", 1);
  await until(5000, "host-a to lead", () => c.signal !== undefined);
  await b.make(name, 1).forceRelease();
  const err = await c.done.catch((e) => e);
  assert.ok(err instanceof LockLostError, String(err));
  assert.equal(err.reason, "not-held");
  assert.ok(c.signal.aborted && c.signal.reason === err);
}

test("memory: candidates lead in turn, the term is the fence, observe tells each leader", async () => {
  const m = new LockManager(new MemoryLockDriver(), { holder: "unused" });
  await leadInTurn(m, m, "scheduler");
});

test("memory: a lost leadership aborts the callback's signal with Lock.Lost", async () => {
  const m = new LockManager(new MemoryLockDriver());
  await lostLeadership(m, m, "lost");
});

test("memory: a campaign waits until its signal aborts, and leaves the queue", async () => {
  const m = new LockManager(new MemoryLockDriver());
  const first = candidate(m, "abort", "a");
  await until(5000, "a to lead", () => first.signal !== undefined);
  const ac = new AbortController();
  const second = m.block("abort", 5, () => assert.fail("led"), { campaign: "b", signal: ac.signal });
  await until(5000, "b to queue", async () => (await m.driver.inspect("abort"))?.waiters.length === 1);
  ac.abort(new Error("stop standing"));
  await assert.rejects(second, /stop standing/);
  assert.equal((await m.driver.inspect("abort")).waiters.length, 0);
  first.resign();
  await first.done;
});

test("a campaign's bad input is refused before any request; a plain lock reads as a leader whose value is its holder", async () => {
  let asked = 0;
  const spy = new Proxy(new MemoryLockDriver(), { get: (d, p) => (asked++, Reflect.get(d, p)) });
  const m = new LockManager(spy);
  for (const [key, opts] of [
    ["e", { campaign: "x".repeat(MAX_VALUE_BYTES + 1) }],
    ["e", { campaign: 7 }],
    ["e", { campaign: "v", semaphore: 2 }],
    ["e", { campaign: "v", mode: "write" }],
    [["e", "f"], { campaign: "v" }],
  ]) {
    await assert.rejects(m.block(key, 5, () => {}, opts), LockInvalidError, JSON.stringify(opts).slice(0, 40));
  }
  assert.equal(asked, 0);
  const p = new LockManager(new MemoryLockDriver(), { holder: "worker-1" });
  await p.try("plain", 5, async (lock) => {
    const l = await p.leader("plain");
    assert.deepEqual([l.value, l.term], ["worker-1", lock.fence]);
  });
  Lock.use(p);
  assert.equal(await Lock.leader("plain"), undefined);
  Lock.use(undefined);
});

const cluster = clusterManagers();

test("cluster: candidates lead in turn, the term is the fence, observe is pushed each leader (GET /v1/watch)", async () => {
  await leadInTurn(cluster(), cluster(), "scheduler");
});

test("cluster: a lost leadership aborts the callback's signal with Lock.Lost", async () => {
  await lostLeadership(cluster(), cluster(), "lost");
});

test("cluster: a leader whose process is killed is followed once its lease runs out, in a higher term", async () => {
  const { endpoints, token } = cluster.cluster();
  // A process holding the name with its lease of 1s kept: a plain lock, read as a leader whose value is its holder.
  const child = spawn(process.execPath, [new URL("./holder-child.mjs", import.meta.url).pathname, "failover", endpoints.join(","), token], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (b) => (out += b));
  const exited = new Promise((r) => child.once("exit", r));
  try {
    const m = cluster();
    await until(10000, "the child to lead", () => out.includes("held "));
    const childTerm = Number(/held (\d+)/.exec(out)[1]);
    assert.deepEqual(await m.leader("failover").then((l) => [l.value, l.term]), ["child", childTerm]);
    const next = candidate(m, "failover", "host-b");
    await until(5000, "host-b to queue", async () => (await m.driver.inspect("failover"))?.waiters.length === 1);
    child.kill("SIGKILL");
    await exited;
    const killed = Date.now();
    await until(10000, "host-b to lead", () => next.signal !== undefined);
    assert.ok(Date.now() - killed < 5000, `led ${Date.now() - killed}ms after the kill; the lease is 1s`);
    assert.ok(next.term > childTerm, `terms ${childTerm}, ${next.term}`);
    next.resign();
    await next.done;
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  }
});
