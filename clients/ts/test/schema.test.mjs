// The client's types follow api/schema/v1.json: the generated file is the
// schema's, and a change of the schema that the client's code does not
// follow fails the type check (so the build).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { root } from "./cluster.mjs";

const pkg = fileURLToPath(new URL("..", import.meta.url));
const tsc = join(pkg, "node_modules", "typescript", "bin", "tsc");

test("src/wire.gen.ts is what api/schema/v1.json gives", () => {
  const r = spawnSync(process.execPath, ["scripts/gen-wire.mjs", "--check"], { cwd: pkg, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
});

test("a field of the schema renamed without the client following fails the type check", () => {
  const dir = mkdtempSync(join(tmpdir(), "zerotal-ts-schema-"));
  try {
    cpSync(join(pkg, "src"), join(dir, "src"), { recursive: true });
    cpSync(join(pkg, "tsconfig.json"), join(dir, "tsconfig.json"));
    const schema = JSON.parse(readFileSync(join(root, "api", "schema", "v1.json"), "utf8"));
    const acq = schema.$defs.AcquireRequest;
    acq.properties.lease_ms = acq.properties.ttl_ms;
    delete acq.properties.ttl_ms;
    acq.required = acq.required.map((f) => (f === "ttl_ms" ? "lease_ms" : f));
    writeFileSync(join(dir, "v1.json"), JSON.stringify(schema));
    const gen = spawnSync(process.execPath, [join(pkg, "scripts", "gen-wire.mjs")], {
      env: { ...process.env, WIRE_SCHEMA: join(dir, "v1.json"), WIRE_OUT: join(dir, "src", "wire.gen.ts") },
      encoding: "utf8",
    });
    assert.equal(gen.status, 0, gen.stderr);
    const r = spawnSync(process.execPath, [tsc, "-p", dir, "--noEmit"], { encoding: "utf8" });
    assert.notEqual(r.status, 0, "the type check passed against a schema without ttl_ms");
    assert.match(r.stdout, /ttl_ms/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
