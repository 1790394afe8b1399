// A process that holds a lock of the cluster with refresh and says on
// stdout when it holds it and when it lost it: the cluster test stops it
// (SIGSTOP) past its lease and resumes it.
import { ClusterLockDriver, LockManager } from "../dist/esm/index.js";

const [key, endpoints, token] = process.argv.slice(2);
const m = new LockManager(new ClusterLockDriver({ endpoints: endpoints.split(","), token, timeout: 2 }), { holder: "child" });
try {
  await m.block(key, 1, async (lock, signal) => {
    console.log(`held ${lock.fence}`);
    await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
  }, { refresh: true, refreshEvery: 0.2 });
  console.log("done");
} catch (err) {
  console.log(`lost ${err.reason ?? err.message}`);
}
