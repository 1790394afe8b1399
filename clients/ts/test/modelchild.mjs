// The TypeScript memory driver served over driverstest's JSON-lines
// protocol (drivers/driverstest/model_remote.go), so that the Go test
// clients/ts/modelbridge drives it with driverstest.RunModel against the
// one reference model of the waiting rules. One line in, "model {json}":
// a call (acquire, release, extend, force, inspect, caps, or cancel of an
// earlier call); one line out per call, in any order, each call served on
// its own so that a wait blocks nothing else. The process exits when its
// stdin closes.
//
// ZEROTAL_TS_DIST names the built package's ESM entry (default
// ../dist/esm/index.js). Durations on the wire are Go's nanoseconds; the
// driver's are seconds.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const entry = process.env.ZEROTAL_TS_DIST ? pathToFileURL(process.env.ZEROTAL_TS_DIST).href : new URL("../dist/esm/index.js", import.meta.url).href;
const { MemoryLockDriver, LockInvalidError } = await import(entry);

const driver = new MemoryLockDriver();
const kinds = ["mutex", "semaphore", "rwlock"];
const ns = 1e9;
/** A wait's bound in seconds: the model ends waits by cancelling them. */
const waitForever = 3600;
const aborts = new Map(); // call id -> AbortController of its wait

function claimOf(c = {}) {
  switch (kinds[c.Kind ?? 0]) {
    case "semaphore":
      return { kind: "semaphore", limit: c.Limit };
    case "rwlock":
      return { kind: "rwlock", write: !!c.Write };
  }
  return { kind: "mutex" };
}

function wireClaim(c) {
  return { Kind: kinds.indexOf(c.kind), Limit: c.kind === "semaphore" ? c.limit : 0 };
}

function wireGrant(g) {
  const out = { Acquired: g.acquired, Fences: g.fences };
  if (g.busy) {
    out.Busy = { Key: g.busy.key, Holder: g.busy.holder };
    if (Number.isFinite(g.busy.ttl)) out.Busy.TTL = Math.round(g.busy.ttl * ns);
  }
  return out;
}

/** An error as the protocol names it, so that errors.Is holds on the Go side. */
function wireError(err, aborted) {
  if (aborted) return { err: "context canceled", is: ["canceled"] };
  if (err instanceof LockInvalidError) return { err: err.message, is: ["invalid"] };
  return { err: String(err?.stack ?? err) };
}

async function serve(c) {
  switch (c.op) {
    case "caps":
      return { caps: { Wait: true, InstantAcquire: true, Shared: true, Sets: true, SetWait: true, MaxHold: true } };
    case "acquire": {
      const q = c.req;
      const ac = new AbortController();
      aborts.set(c.id, ac);
      const req = { keys: q.Keys, owner: q.Owner, ttl: q.TTL / ns, claim: claimOf(q.Claim), maxHold: (q.MaxHold ?? 0) / ns, wait: q.Wait ? waitForever : 0, signal: ac.signal };
      try {
        const g = await driver.claim(req);
        // A wait that ends without its keys is an error in the Go contract.
        if (q.Wait && !g.acquired) return { grant: wireGrant(g), err: `not acquired: ${g.busy?.key}`, is: ["not_acquired"] };
        return { grant: wireGrant(g) };
      } catch (err) {
        return wireError(err, ac.signal.aborted);
      } finally {
        aborts.delete(c.id);
      }
    }
    case "release":
      return { ok: await driver.release(c.key, c.owner) };
    case "extend":
      return { ok: await driver.extend(c.key, c.owner, c.ttl / ns) };
    case "force":
      await driver.forceRelease(c.key);
      return {};
    case "inspect": {
      const h = await driver.inspect(c.key);
      if (!h) return {};
      return {
        ok: true,
        holding: {
          Claim: wireClaim(h.claim),
          Holders: h.holders.map((x) => ({ Owner: x.owner, Fence: x.fence, Remaining: Math.round(x.ttl * ns), Write: x.write })),
          Waiters: h.waiters.map((w) => ({ Owner: w.owner, Write: w.write })),
          WaiterCount: h.waiters.length,
        },
      };
    }
  }
  return { err: `unknown call ${JSON.stringify(c.op)}` };
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.startsWith("model ")) return;
  let c;
  try {
    c = JSON.parse(line.slice("model ".length));
  } catch {
    return;
  }
  if (c.op === "cancel") {
    aborts.get(c.of)?.abort();
    return;
  }
  serve(c).then(
    (r) => process.stdout.write(`model ${JSON.stringify({ id: c.id, ...r })}\n`),
    (err) => process.stdout.write(`model ${JSON.stringify({ id: c.id, ...wireError(err, false) })}\n`),
  );
});
// The parent is done: exit with any waits still under way, as the Go child does.
lines.on("close", () => process.exit(0));
