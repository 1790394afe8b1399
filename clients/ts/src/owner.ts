import { randomToken } from "./platform.js";

/** A new owner: a random 32-hex-digit token and, after a colon, what the holder says of itself (shown to others in LockNotAcquiredError.holder, never the token). */
export async function newOwner(holder: string): Promise<string> {
  return (await randomToken()) + ":" + holder;
}

/** What owner says of its holder: the part after the token. */
export function holderOf(owner: string): string {
  const m = /^[0-9a-f]{32}:(.*)$/s.exec(owner);
  if (m) return m[1] ?? "";
  return /^[0-9a-f]{32}$/.test(owner) ? "" : owner;
}

/** The default holder description: the runtime, process id and host when the platform tells them. */
export function defaultHolder(): string {
  const proc = (globalThis as { process?: { pid?: number } }).process;
  const pid = proc?.pid ?? 0;
  const runtime = "Bun" in globalThis ? "bun" : "Deno" in globalThis ? "deno" : "node";
  return `${runtime}:${pid}`;
}
