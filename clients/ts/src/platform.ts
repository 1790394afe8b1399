// What the package needs of the platform beyond fetch, with the fallbacks
// for runtimes that lack it (Node 18, Debian 12's, has no global crypto,
// no AbortSignal.any and no Symbol.asyncDispose).

/** An AbortSignal aborted when any of signals is, with its reason. */
export function anySignal(signals: AbortSignal[]): AbortSignal {
  const any = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(signals);
  const ac = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      ac.abort(s.reason);
      break;
    }
    s.addEventListener("abort", () => ac.abort(s.reason), { once: true, signal: ac.signal });
  }
  return ac.signal;
}

/** 16 random bytes as 32 lower-case hex digits, from the platform's cryptographic source. */
export async function randomToken(): Promise<string> {
  // A module name in a variable: neither the type check nor a bundler
  // follows it, and only a runtime without the global comes here.
  const nodeCrypto = "node:crypto";
  const c = (globalThis as { crypto?: Crypto }).crypto ?? ((await import(nodeCrypto)) as { webcrypto: Crypto }).webcrypto;
  return [...c.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Symbol.asyncDispose, defined as TypeScript's own helpers look it up where the runtime has none. */
export const asyncDispose: typeof Symbol.asyncDispose =
  Symbol.asyncDispose ?? ((Symbol as { asyncDispose?: symbol }).asyncDispose = Symbol.for("Symbol.asyncDispose") as typeof Symbol.asyncDispose);
