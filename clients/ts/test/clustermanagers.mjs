// Managers on three real lockcluster processes that a test file shares:
// the processes start before the file's tests and stop after them.
import { after, before } from "node:test";
import { ClusterLockDriver, LockManager } from "../dist/esm/index.js";
import { startCluster } from "./cluster.mjs";

/** Registers the cluster's start and stop with the file's tests, and returns a function that makes a manager on it (disposed after the tests). */
export function clusterManagers() {
  let c;
  const made = [];
  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    for (const m of made) await m.dispose();
    await c?.close();
  });
  const manager = () => {
    const m = new LockManager(new ClusterLockDriver({ endpoints: c.endpoints, token: c.token, timeout: 3 }));
    made.push(m);
    return m;
  };
  /** The cluster itself (endpoints, token, nodes), once started. */
  manager.cluster = () => c;
  return manager;
}
