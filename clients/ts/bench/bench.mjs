// The TypeScript client's figures beside the Go client's, in one run on one
// three-node cluster of real lockcluster processes on loopback, and beside
// node-redlock on one redis-server: acquire/release cycles per second of 1
// worker (serial) and of 32 workers on a key each, and the delay from a
// release to a watcher's news of it. Run: make -C ../../.. bin/lockcluster
// && npm ci && node bench.mjs [seconds per row, default 5].
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import Redlock from "redlock";
import { ClusterLockDriver, LockManager } from "../dist/esm/index.js";
import { binary, freeAddr, startCluster, until } from "../test/cluster.mjs";

const seconds = Number(process.argv[2] ?? 5);

/** Cycles per second of workers loops of cycle(worker) for seconds, after a warm-up. */
async function cycles(workers, cycle) {
  const run = async (ms) => {
    let n = 0;
    const end = performance.now() + ms;
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        while (performance.now() < end) {
          await cycle(w);
          n++;
        }
      }),
    );
    return n;
  };
  await run(500);
  const t0 = performance.now();
  const n = await run(seconds * 1000);
  return n / ((performance.now() - t0) / 1000);
}

/** The Go client's figure: lockcluster bench against the same cluster. */
function goBench(args) {
  const out = execFileSync(binary(), ["bench", ...args, "--duration", `${seconds}s`, "--warmup", "500ms"], { encoding: "utf8", env: { ...process.env } });
  return Number(/= ([\d.]+)\/s/.exec(out)[1]);
}

function row(name, serial, parallel) {
  console.log(`| ${name} | ${serial.toFixed(0)} | ${parallel.toFixed(0)} |`);
}

const c = await startCluster();
const dir = mkdtempSync(join(tmpdir(), "zerotal-ts-bench-"));
let redis;
try {
  console.log(`${availableParallelism()} CPUs, Node ${process.version}, ${seconds}s a row after 0.5s of warm-up, TTL 10s, a key per worker\n`);
  console.log("| client | serial cycles/s | 32 workers cycles/s |\n| --- | --- | --- |");
  const endpoints = c.endpoints.join(",");
  const cl = ["--driver", "cluster", "--endpoints", endpoints, "--token", c.token];
  const m = new LockManager(new ClusterLockDriver({ endpoints: c.endpoints, token: c.token }));
  const tsCycle = (w) => m.try(`bench:${w}`, 10, () => {});
  const goSerial = goBench([...cl, "--workers", "1"]);
  const tsSerial = await cycles(1, tsCycle);
  const goParallel = goBench([...cl, "--workers", "32"]);
  const tsParallel = await cycles(32, tsCycle);
  row("Go (lockcluster bench), 3-node cluster", goSerial, goParallel);
  row("TypeScript (@zerotal/lock), 3-node cluster", tsSerial, tsParallel);
  console.log(`\nTS / Go: serial ${(tsSerial / goSerial).toFixed(2)}, 32 workers ${(tsParallel / goParallel).toFixed(2)}`);

  // A release seen by a watcher (GET /v1/watch).
  const ac = new AbortController();
  const it = m.driver.changes("watched", ac.signal);
  await it.next();
  const delays = [];
  for (let i = 0; i < 200; i++) {
    const lock = m.make("watched", 10);
    await lock.acquire();
    await it.next();
    const t0 = performance.now();
    await lock.release();
    await it.next();
    delays.push(performance.now() - t0);
  }
  ac.abort();
  delays.sort((a, b) => a - b);
  console.log(`\nrelease seen by a watcher (from the release's call): p50 ${delays[100].toFixed(1)}ms p99 ${delays[198].toFixed(1)}ms over 200`);

  // node-redlock and the Go library on one redis-server.
  const addr = await freeAddr();
  const port = Number(addr.split(":")[1]);
  redis = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
  const r = new Redis({ port, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 0 });
  await until(10000, "redis-server", () => r.connect().then(() => true, () => false));
  const redlock = new Redlock([r], { retryCount: 0 });
  const rlCycle = async (w) => (await redlock.acquire([`bench:${w}`], 10000)).release();
  const rlSerial = await cycles(1, rlCycle);
  const rlParallel = await cycles(32, rlCycle);
  process.env.REDIS_URL = `redis://${addr}`;
  const goRedisSerial = goBench(["--driver", "redis", "--workers", "1"]);
  const goRedisParallel = goBench(["--driver", "redis", "--workers", "32"]);
  console.log("\n| client on one redis-server | serial cycles/s | 32 workers cycles/s |\n| --- | --- | --- |");
  row("node-redlock 5.0.0-beta.2 (ioredis)", rlSerial, rlParallel);
  row("Go (lockcluster bench --driver redis)", goRedisSerial, goRedisParallel);
  r.disconnect();
} finally {
  redis?.kill("SIGKILL");
  await c.close();
  rmSync(dir, { recursive: true, force: true });
}
