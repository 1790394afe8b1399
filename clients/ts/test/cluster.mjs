// Starts and stops real lockcluster agents for the tests: three nodes on
// free loopback ports, each a process of bin/lockcluster (built by `make
// test-ts`, or here when missing), stopped by PID when the test file ends.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../../../", import.meta.url));
export const token = "ts-client-test-token-0123456789";
const raftSecret = "ts-client-raft-secret-0123456789";

/** The lockcluster binary, built once when the tree has none. */
export function binary() {
  const bin = process.env.LOCKCLUSTER_BIN || join(root, "bin", "lockcluster");
  if (!existsSync(bin)) {
    const r = spawnSync("go", ["build", "-o", bin, "./cmd/lockcluster"], { cwd: root, stdio: "inherit" });
    if (r.status !== 0) throw new Error("go build ./cmd/lockcluster failed");
  }
  return bin;
}

/** A free loopback address, host:port. */
export function freeAddr() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(`127.0.0.1:${port}`));
    });
  });
}

/** Polls check every 20ms until it returns a truthy value or ms pass; throws saying what was awaited. */
export async function until(ms, what, check) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`waited ${ms}ms for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

class Node {
  constructor(id, raft, http, dir, peers) {
    Object.assign(this, { id, raft, http, dir, peers, proc: undefined, exited: undefined });
    this.log = join(dir, "node.log");
  }

  start() {
    const fd = openSync(this.log, "a");
    const args = ["agent", "--id", this.id, "--data-dir", join(this.dir, "data"), "--raft-addr", this.raft,
      "--http-addr", this.http, "--bootstrap", this.peers, "--token", token, "--raft-secret", raftSecret];
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith("LOCKCLUSTER_")) delete env[k];
    this.proc = spawn(binary(), args, { stdio: ["ignore", fd, fd], env });
    this.exited = new Promise((r) => this.proc.once("exit", r));
  }

  get running() {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Sends sig and, unless it only pauses the process, waits for its exit. */
  async signal(sig) {
    if (!this.running) return;
    process.kill(this.proc.pid, sig);
    if (sig !== "SIGSTOP" && sig !== "SIGCONT") await this.exited;
  }

  kill() {
    return this.signal("SIGKILL");
  }
}

/** Three agents on loopback that bootstrap one cluster; resolves once a leader is agreed. */
export async function startCluster() {
  const dir = mkdtempSync(join(tmpdir(), "zerotal-ts-"));
  const specs = [];
  for (let i = 1; i <= 3; i++) specs.push({ id: `n${i}`, raft: await freeAddr(), http: await freeAddr() });
  const peers = specs.map((s) => `${s.id}=${s.raft}=${s.http}`).join(",");
  const nodes = specs.map((s) => {
    const d = join(dir, s.id);
    return new Node(s.id, s.raft, s.http, d, peers);
  });
  const { mkdirSync } = await import("node:fs");
  for (const n of nodes) {
    mkdirSync(n.dir, { recursive: true });
    n.start();
  }
  const c = {
    nodes,
    endpoints: nodes.map((n) => n.http),
    token,
    /** The node every running node agrees leads, waiting up to ms for one. */
    leader: (ms = 30000) => until(ms, "an agreed leader", () => agreedLeader(nodes)),
    async close() {
      for (const n of nodes) {
        if (n.running) {
          await n.signal("SIGCONT");
          await n.kill();
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
    logs() {
      return nodes.map((n) => `---- ${n.id} ----\n${existsSync(n.log) ? readFileSync(n.log, "utf8") : ""}`).join("\n");
    },
  };
  try {
    await c.leader();
  } catch (err) {
    console.error(c.logs());
    await c.close();
    throw err;
  }
  return c;
}

async function status(n) {
  try {
    const r = await fetch(`http://${n.http}/v1/status`, { headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(1000) });
    return r.ok ? await r.json() : undefined;
  } catch {
    return undefined;
  }
}

async function agreedLeader(nodes) {
  let leader;
  for (const n of nodes) {
    if (!n.running) continue;
    const s = await status(n);
    if (!s || !s.leader_id) return undefined;
    if (s.state === "leader") leader = n;
  }
  return leader;
}
