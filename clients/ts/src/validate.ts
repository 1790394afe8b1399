import { LockInvalidError } from "./errors.js";
import { limits } from "./wire.gen.js";

/** The longest key in bytes of UTF-8, prefix included (the server's limit). */
export const MAX_KEY_BYTES = 1024;
/** The most keys one acquire names. */
export const MAX_KEYS = limits["AcquireRequest.keys.maxItems"];

const encoder = new TextEncoder();

/** Throws LockInvalidError for a key the backend would refuse, before any request. */
export function checkKey(key: unknown, field = "key"): asserts key is string {
  if (typeof key !== "string" || key === "") throw new LockInvalidError(field, "must be a non-empty string");
  if (encoder.encode(key).length > MAX_KEY_BYTES) throw new LockInvalidError(field, `longer than ${MAX_KEY_BYTES} bytes`);
}

/** Throws LockInvalidError unless keys are 1 to MAX_KEYS distinct valid keys. */
export function checkKeys(keys: readonly string[]): void {
  if (keys.length === 0 || keys.length > MAX_KEYS) throw new LockInvalidError("keys", `${keys.length} keys; name 1 to ${MAX_KEYS}`);
  if (new Set(keys).size !== keys.length) throw new LockInvalidError("keys", "a key is named twice");
  for (const k of keys) checkKey(k, "keys");
}

/** Throws LockInvalidError unless seconds is a positive finite number of at least a millisecond. */
export function checkSeconds(seconds: unknown, field: string, zeroOk = false): asserts seconds is number {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0 || (!zeroOk && seconds < 0.001)) {
    throw new LockInvalidError(field, `${String(seconds)} seconds; give ${zeroOk ? "0 or more" : "at least 0.001"}`);
  }
}

/** Whole milliseconds of seconds, at least 1 when seconds > 0. */
export function millis(seconds: number): number {
  return seconds > 0 ? Math.max(1, Math.round(seconds * 1000)) : 0;
}
