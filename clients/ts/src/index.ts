export { Lock } from "./lock.js";
export { LockManager, type BlockOptions, type ClaimOptions, type LockCallback, type LockKey, type TryOptions } from "./manager.js";
export { ManagedLock } from "./managed.js";
export { LockConfig, configFromEnv, driverOf, DEFAULT_PREFIX, type LockConfigInput, type ResolvedLockConfig } from "./config.js";
export {
  LockError,
  LockNotAcquiredError,
  LockLostError,
  LockUnavailableError,
  LockInvalidError,
  LockBackendError,
  type HeldBy,
  type LostReason,
} from "./errors.js";
export type { Claim, Holding, LockDriver, LockGrant, LockRequest } from "./types.js";
export { MAX_VALUE_BYTES, type Leader, type ObserveOptions } from "./election.js";
export { MemoryLockDriver } from "./memory.js";
export { ClusterLockDriver, type ClusterOptions } from "./cluster.js";
export type { TransportOptions } from "./transport.js";
export { MAX_KEY_BYTES, MAX_KEYS } from "./validate.js";
export type * as wire from "./wire.gen.js";
