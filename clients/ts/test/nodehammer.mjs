// The Node side of the cross-language test (see gohammer/main.go): workers
// of this process take one key of the cluster over and over with the
// package's facade and tell the referee each entry and leave with its fence.
import { ClusterLockDriver, Lock, LockManager } from "../dist/esm/index.js";

const [endpoints, token, key, claim, workers, rounds, referee] = process.argv.slice(2);
Lock.use(new LockManager(new ClusterLockDriver({ endpoints: endpoints.split(","), token }), { holder: "node" }));

function modeOf(i) {
  if (claim === "semaphore") return ["semaphore", { semaphore: 2 }];
  if (claim === "rw") return i % 3 === 0 ? ["write", { mode: "write" }] : ["read", { mode: "read" }];
  return ["mutex", {}];
}

async function tell(path, mode, fence) {
  const r = await fetch(referee + path, { method: "POST", body: JSON.stringify({ lang: "node", mode, fence }) });
  if (!r.ok) throw new Error(`referee refused ${path}: ${r.status}`);
}

await Promise.all(
  Array.from({ length: Number(workers) }, async (_, w) => {
    for (let i = 0; i < Number(rounds); i++) {
      const [mode, opts] = modeOf(w * Number(rounds) + i + 1);
      await Lock.block(
        key,
        10,
        async (lock) => {
          await tell("/enter", mode, lock.fence);
          await new Promise((r) => setTimeout(r, 1)); // the section's work: a holder stays a moment
          await tell("/leave", mode, lock.fence);
        },
        { ...opts, timeout: 30 },
      );
    }
  }),
);
