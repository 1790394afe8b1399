// One lock across languages: a Go process (package lock) and a Node process
// (this package) hammer one key of a real cluster, as a mutex, a semaphore
// of 2 and a read/write lock; a referee in this process, told of every
// entry into and exit from the critical section, checks that there are
// never more holders than the claim allows and that the fences of
// exclusive grants strictly increase across both languages.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { root, startCluster } from "./cluster.mjs";

let c;
let dir;
let gohammer;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "zerotal-ts-referee-"));
  gohammer = join(dir, "gohammer");
  const b = spawnSync("go", ["build", "-o", gohammer, "./clients/ts/test/gohammer"], { cwd: root, stdio: "inherit" });
  assert.equal(b.status, 0, "go build ./clients/ts/test/gohammer");
  c = await startCluster();
});
after(async () => {
  await c?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The referee: the rules of claim over the entries and leaves it is told of. */
function referee(claim) {
  const limit = claim === "semaphore" ? 2 : 1;
  const held = new Map(); // fence -> mode
  const seen = new Set();
  let maxFence = 0;
  const counts = { go: 0, node: 0 };
  const broken = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (b) => (body += b));
    req.on("end", () => {
      const { lang, mode, fence } = JSON.parse(body);
      const why = req.url === "/enter" ? enter(lang, mode, fence) : leave(fence);
      if (why) broken.push(`${lang} ${req.url} ${mode} fence ${fence}: ${why}`);
      res.writeHead(why ? 409 : 200).end();
    });
  });
  function enter(lang, mode, fence) {
    if (seen.has(fence)) return "a fence given twice";
    seen.add(fence);
    const modes = [...held.values()];
    if (mode === "read" && modes.includes("write")) return "a reader beside a writer";
    if (mode === "write" && modes.length > 0) return `a writer beside ${modes.length} holder(s)`;
    if (mode !== "read" && modes.length >= limit) return `${modes.length + 1} holders of a claim of ${limit}`;
    // An exclusive grant comes after every grant the referee saw enter.
    if ((mode === "mutex" || mode === "write") && fence <= maxFence) return `fence not above ${maxFence}`;
    maxFence = Math.max(maxFence, fence);
    held.set(fence, mode);
    counts[lang]++;
    return "";
  }
  function leave(fence) {
    return held.delete(fence) ? "" : "a leave without an entry";
  }
  return { server, counts, broken };
}

for (const claim of ["mutex", "semaphore", "rw"]) {
  test(`a Go process and a Node process on one key (${claim}): never more holders than allowed, exclusive fences increasing`, async () => {
    const r = referee(claim);
    await new Promise((ok) => r.server.listen(0, "127.0.0.1", ok));
    const url = `http://127.0.0.1:${r.server.address().port}`;
    const key = `cross:${claim}`;
    const workers = 3;
    const rounds = 15;
    const procs = [
      spawn(gohammer, ["-addrs", c.endpoints.join(","), "-token", c.token, "-key", key, "-claim", claim, "-workers", `${workers}`, "-rounds", `${rounds}`, "-referee", url], { stdio: ["ignore", "inherit", "inherit"] }),
      spawn(process.execPath, [new URL("./nodehammer.mjs", import.meta.url).pathname, c.endpoints.join(","), c.token, key, claim, `${workers}`, `${rounds}`, url], { stdio: ["ignore", "inherit", "inherit"] }),
    ];
    try {
      const codes = await Promise.all(procs.map((p) => new Promise((ok) => p.once("exit", (code) => ok(code)))));
      assert.deepEqual(r.broken, []);
      assert.deepEqual(codes, [0, 0], "a hammer failed");
      assert.deepEqual(r.counts, { go: workers * rounds, node: workers * rounds });
    } finally {
      for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
      r.server.close();
    }
  });
}
