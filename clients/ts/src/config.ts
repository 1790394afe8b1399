import { ClusterLockDriver, type ClusterOptions } from "./cluster.js";
import { LockInvalidError } from "./errors.js";
import { MemoryLockDriver } from "./memory.js";
import type { LockDriver } from "./types.js";

/** The prefix of every key on the memory driver when none is given (the Go library's DefaultPrefix). */
export const DEFAULT_PREFIX = "zerotal_lock:";

/** What config/lock.ts exports: the driver and its settings. */
export interface LockConfigInput {
  /** "memory" (in-process, the default) or "cluster" (a lockcluster, over HTTP). */
  driver?: "memory" | "cluster";
  /** Prepended to every key. Default: none on "cluster" (keys as the cluster and its commands name them), "zerotal_lock:" on memory. */
  prefix?: string;
  /** The cluster driver's settings; endpoints required with driver "cluster". */
  cluster?: ClusterOptions;
  /** What a lock's owner says of its holder (LockNotAcquiredError.holder for others). Default: runtime and process id. */
  holder?: string;
}

/** A configuration with its defaults applied. */
export interface ResolvedLockConfig {
  driver: "memory" | "cluster";
  prefix: string;
  cluster: ClusterOptions | undefined;
  holder: string | undefined;
}

/** Type-checks a configuration and applies its defaults; throws LockInvalidError for one that cannot work. */
export function LockConfig(input: LockConfigInput = {}): ResolvedLockConfig {
  const driver = input.driver ?? (input.cluster ? "cluster" : "memory");
  if (driver !== "memory" && driver !== "cluster") {
    throw new LockInvalidError("driver", `${JSON.stringify(driver)}; this package has "memory" and "cluster" (SQLite and Redis are the Go library's)`);
  }
  if (driver === "cluster" && !input.cluster?.endpoints?.length) {
    throw new LockInvalidError("cluster.endpoints", 'driver "cluster" needs the nodes\' addresses (LOCKCLUSTER_ENDPOINTS)');
  }
  return {
    driver,
    prefix: input.prefix ?? (driver === "cluster" ? "" : DEFAULT_PREFIX),
    cluster: driver === "cluster" ? input.cluster : undefined,
    holder: input.holder,
  };
}

type Env = Record<string, string | undefined>;

/**
 * The configuration the same LOCKCLUSTER_* variables give the Go library:
 * LOCKCLUSTER_DRIVER, LOCKCLUSTER_PREFIX, LOCKCLUSTER_ENDPOINTS (comma
 * separated; their presence alone means "cluster"), LOCKCLUSTER_TOKEN,
 * LOCKCLUSTER_CLUSTER_ID, and LOCKCLUSTER_TLS_CA (bare addresses mean
 * https; the CA itself is the platform's to trust: NODE_EXTRA_CA_CERTS on
 * Node). With none of them: the memory driver.
 */
export function configFromEnv(env: Env = platformEnv()): ResolvedLockConfig {
  const endpoints = (env.LOCKCLUSTER_ENDPOINTS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  const driver = env.LOCKCLUSTER_DRIVER || (endpoints.length ? "cluster" : "memory");
  const input: LockConfigInput = { driver: driver as "memory" | "cluster" };
  if (env.LOCKCLUSTER_PREFIX !== undefined) input.prefix = env.LOCKCLUSTER_PREFIX;
  if (endpoints.length) {
    input.cluster = {
      endpoints,
      token: env.LOCKCLUSTER_TOKEN || undefined,
      clusterId: env.LOCKCLUSTER_CLUSTER_ID || undefined,
      tls: Boolean(env.LOCKCLUSTER_TLS_CA || env.LOCKCLUSTER_TLS_CERT),
    };
  }
  return LockConfig(input);
}

/** The driver a configuration names. */
export function driverOf(config: ResolvedLockConfig): LockDriver {
  return config.driver === "cluster" ? new ClusterLockDriver(config.cluster!) : new MemoryLockDriver();
}

function platformEnv(): Env {
  const g = globalThis as { process?: { env?: Env }; Deno?: { env: { toObject(): Env } } };
  if (g.process?.env) return g.process.env;
  try {
    return g.Deno?.env.toObject() ?? {};
  } catch {
    return {}; // Deno without --allow-env
  }
}
