// The package as a user gets it: npm pack's tarball installed into an
// empty project, the seed's examples run from it under Node (ES module and
// CommonJS), its declarations type-check a TypeScript user's file (with
// `await using`), and the same file runs under Bun and under Deno where
// their npm packages install. The facade finds the cluster through
// LOCKCLUSTER_* alone.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startCluster } from "./cluster.mjs";

const pkg = fileURLToPath(new URL("..", import.meta.url));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
let c;
let dir;
let project;
let env;

const userTS = `
import { Lock, LockNotAcquiredError, type LockDriver } from "@zerotal/lock";

const fence: number = await Lock.try("invoice:123", 10, async (lock, signal) => {
  if (signal.aborted) throw new Error("aborted at once");
  try {
    await Lock.try("invoice:123", 10, () => "twice");
  } catch (err) {
    if (!(err instanceof LockNotAcquiredError) || err.status !== 409) throw err;
  }
  return lock.fence;
});
{
  await using lock = Lock.make("payment:456", 15);
  if (!(await lock.acquire())) throw new Error("payment:456 busy");
}
const again = Lock.make("payment:456", 15);
if (await again.acquire() !== true) throw new Error("await using did not release");
await again.release(); // the next runtime's run takes it again
const driver: LockDriver = Lock.manager.driver;
console.log("ok", fence > 0, typeof driver.acquire);
`;

before(async () => {
  c = await startCluster();
  dir = mkdtempSync(join(tmpdir(), "zerotal-ts-pack-"));
  // dist is built (npm test runs after npm run build): pack it as it is.
  execFileSync(npm, ["pack", "--ignore-scripts", "--pack-destination", dir], { cwd: pkg, stdio: "ignore" });
  const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz"));
  project = join(dir, "project");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }));
  execFileSync(npm, ["install", "--offline", "--no-audit", "--no-fund", join(dir, tarball)], { cwd: project, stdio: "ignore" });
  env = { ...process.env, LOCKCLUSTER_ENDPOINTS: c.endpoints.join(","), LOCKCLUSTER_TOKEN: c.token };
});
after(async () => {
  await c?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function run(cmd, args, more = {}) {
  const r = spawnSync(cmd, args, { cwd: project, env: { ...env, ...more }, encoding: "utf8" });
  assert.equal(r.status, 0, `${cmd} ${args.join(" ")}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

test("the tarball has the builds, the declarations and nothing of the tests", () => {
  const files = execFileSync("tar", ["-tzf", join(dir, readdirSync(dir).find((f) => f.endsWith(".tgz")))], { encoding: "utf8" });
  for (const f of ["package/dist/esm/index.js", "package/dist/esm/index.d.ts", "package/dist/cjs/index.js", "package/dist/cjs/index.d.ts", "package/README.md"]) {
    assert.ok(files.includes(f), `${f} missing from:\n${files}`);
  }
  assert.doesNotMatch(files, /test\/|src\/|node_modules/);
});

test("ES module and CommonJS users in an empty project, configured by LOCKCLUSTER_* alone", () => {
  writeFileSync(
    join(project, "esm.mjs"),
    `import { Lock } from "@zerotal/lock";
     const fence = await Lock.try("report:export", 30, (lock) => lock.fence);
     await Lock.block("report:export", 30, async (lock, signal) => { if (signal.aborted) throw new Error("aborted"); }, { timeout: 60, retryDelay: 200 });
     console.log(Lock.manager.driver.constructor.name, fence > 0);`,
  );
  writeFileSync(
    join(project, "cjs.cjs"),
    `const { Lock } = require("@zerotal/lock");
     Lock.try("cjs", 10, (lock) => lock.fence).then((f) => console.log(Lock.manager.driver.constructor.name, f > 0));`,
  );
  assert.equal(run(process.execPath, ["esm.mjs"]).trim(), "ClusterLockDriver true");
  assert.equal(run(process.execPath, ["cjs.cjs"]).trim(), "ClusterLockDriver true");
});

test("a TypeScript user's file type-checks against the declarations", () => {
  writeFileSync(join(project, "user.ts"), userTS);
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022", "ESNext.Disposable", "DOM"], strict: true, noEmit: true, types: [] }, files: ["user.ts"] }),
  );
  run(process.execPath, [join(pkg, "node_modules", "typescript", "bin", "tsc"), "-p", project]);
});

/** The runtime name's npm package installed beside the project, or undefined (the test skipped) where it does not install. */
function runtime(t, name) {
  const at = join(dir, name);
  mkdirSync(at);
  const r = spawnSync(npm, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--prefix", at, name], { encoding: "utf8", timeout: 120_000 });
  const bin = join(at, "node_modules", ".bin", name);
  if (r.status !== 0 || spawnSync(bin, ["--version"]).status !== 0) {
    t.skip(`${name}'s npm package does not install here: ${(r.stderr ?? "").split("\n").slice(-3).join(" ")}`);
    return undefined;
  }
  writeFileSync(join(project, "user.ts"), userTS);
  return bin;
}

test("under Bun, where its npm package installs", (t) => {
  const bun = runtime(t, "bun");
  if (bun) assert.equal(run(bun, ["user.ts"]).trim(), "ok true function");
});

test("under Deno, where its npm package installs", (t) => {
  const deno = runtime(t, "deno");
  // The project's node_modules, as npm installed it; Deno's cache in the test's directory.
  if (deno) assert.equal(run(deno, ["run", "--allow-all", "--no-check", "--node-modules-dir=manual", "user.ts"], { DENO_DIR: join(dir, "deno-cache") }).trim(), "ok true function");
});
