import { LockBackendError, LockInvalidError, LockNotAcquiredError, LockUnavailableError } from "./errors.js";
import { anySignal } from "./platform.js";
import { fetchSender, nodeSender, type Reply, type Send } from "./sender.js";
import { streamSender } from "./stream.js";
import type { ErrorBody, Status } from "./wire.gen.js";

/** How to reach a cluster. Times in seconds. */
export interface TransportOptions {
  /** The nodes' HTTP addresses: "host:port" or "http(s)://host:port"; any node will do, more give failover. */
  endpoints: string[];
  /** The cluster's bearer token, when it has one. */
  token?: string | undefined;
  /** Sent with every request; a node of another cluster refuses it. */
  clusterId?: string | undefined;
  /** A bare host:port means https (the platform's trust store: NODE_EXTRA_CA_CERTS on Node). */
  tls?: boolean | undefined;
  /** Bounds one call, failovers included (a wait gets its wait on top). Default 10. */
  timeout?: number | undefined;
  /** How long one node may take to answer before the call tries another. Default half the timeout, at least 1. */
  attemptTimeout?: number | undefined;
  /** Plain HTTP/1.1 for every request: no API stream (see stream.ts), which Node otherwise speaks to plain-http nodes. */
  noStream?: boolean | undefined;
  /** The fetch to use (a custom one for client certificates). Default: the platform's. */
  fetch?: typeof fetch | undefined;
}

/** One request to the cluster. */
export interface Call {
  op: string;
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  query?: Record<string, string>;
  /** The key a 409 is about, when the answer does not name it. */
  key?: string;
  /** Milliseconds the node may hold the request (wait_ms). */
  waitMs?: number;
  signal?: AbortSignal | undefined;
}

/** An answer that is not a 2xx, as the node gave it. */
export class Answer {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {}
}

const firstPause = 20;

/**
 * Sends calls to a cluster: to the leader when known, failing over across
 * nodes on refused connections, silent nodes and 503s, and asking every
 * node's status for the leader after a round that failed (as the Go client
 * does). A call that no node answered within its budget is a
 * LockUnavailableError, never contention.
 */
export class Transport {
  readonly #bases: string[];
  readonly #opts: TransportOptions;
  #send: Send | undefined;
  readonly #timeoutMs: number;
  readonly #attemptMs: number;
  #preferred: string | undefined;
  #stale = true;

  constructor(opts: TransportOptions) {
    if (!opts.endpoints?.length) throw new LockInvalidError("endpoints", "name at least one node");
    this.#opts = opts;
    this.#bases = opts.endpoints.map((e) => base(e, opts.tls ?? false));
    if (opts.fetch) this.#send = fetchSender(opts.fetch);
    this.#timeoutMs = (opts.timeout ?? 10) * 1000;
    this.#attemptMs = (opts.attemptTimeout ?? Math.max(opts.timeout ?? 10, 2) / 2) * 1000;
  }

  /**
   * Sends c and returns the 2xx body, or the node's non-2xx Answer when
   * it is a 404 or 409 (the callers say what those mean); any other
   * refusal is thrown.
   */
  async send<T>(c: Call): Promise<T | Answer> {
    const body = c.body === undefined ? undefined : JSON.stringify(c.body);
    this.#send ??= await this.#sender();
    const start = Date.now();
    const deadline = start + this.#timeoutMs + (c.waitMs ?? 0);
    let earlier = false; // a try may have taken effect
    let last: unknown;
    let pause = firstPause;
    for (let round = 0; round < 1024 && Date.now() < deadline; round++) {
      if (round > 0) {
        await sleep(Math.min(pause, deadline - Date.now()), c.signal);
        pause = Math.min(pause * 2, Math.max(firstPause, this.#attemptMs / 10));
        this.#stale = true;
      }
      if (this.#stale) await this.#discover(c.signal, deadline);
      for (const b of this.#candidates()) {
        if (Date.now() >= deadline) break;
        c.signal?.throwIfAborted();
        const limit = Math.min(deadline - Date.now(), (c.waitMs ?? 0) + this.#attemptMs);
        // One controller and one timer an attempt: AbortSignal.timeout and
        // AbortSignal.any cost more than the request itself on Node 20.
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(new Error(`${b}: no answer in ${limit}ms`)), Math.max(1, limit));
        const onAbort = () => ac.abort(c.signal?.reason);
        c.signal?.addEventListener("abort", onAbort, { once: true });
        let resp: Reply;
        try {
          resp = await this.#send(b + c.path + query(c.query), {
            method: c.method,
            headers: this.#headers(body !== undefined),
            ...(body !== undefined ? { body } : {}),
            signal: ac.signal,
          });
        } catch (err) {
          c.signal?.throwIfAborted();
          if (c.method === "POST" && !refused(err)) earlier = true;
          last = err;
          this.#stale = true;
          continue;
        } finally {
          clearTimeout(timer);
          c.signal?.removeEventListener("abort", onAbort);
        }
        if (resp.ok) {
          if (b !== this.#preferred) {
            this.#preferred = b;
          }
          return JSON.parse(await resp.text()) as T;
        }
        const eb = await errorBody(resp);
        if (resp.status === 503 || resp.status === 502 || resp.status === 504) {
          // No leader, leadership moved, or shutting down: try elsewhere.
          // A 503 may come after the request entered the log.
          if (c.method === "POST") earlier = true;
          last = new Error(`${b}: ${resp.status} ${eb.code}: ${eb.message}`);
          this.#stale = true;
          continue;
        }
        if (resp.status === 404 || resp.status === 409) return new Answer(resp.status, eb);
        if (resp.status === 400) throw new LockInvalidError("request", eb.message);
        throw new LockBackendError(resp.status, eb.code, eb.message);
      }
    }
    const why = last instanceof Error ? last.message : String(last ?? "no node answered in time");
    throw new LockUnavailableError(`lock cluster did not answer ${c.op} within ${Date.now() - start}ms: ${why}`, earlier, {
      cause: last,
    });
  }

  /** On Node the API stream, over node:http; elsewhere fetch. */
  async #sender(): Promise<Send> {
    const http = await nodeSender();
    if (!http) return fetchSender(globalThis.fetch.bind(globalThis));
    return this.#opts.noStream ? http : streamSender(http);
  }

  /** Asks a node for its status (GET /v1/status). */
  async status(signal?: AbortSignal): Promise<Status> {
    const s = await this.send<Status>({ op: "status", method: "GET", path: "/v1/status", signal });
    if (s instanceof Answer) throw new LockBackendError(s.status, s.body.code, s.body.message);
    return s;
  }

  #candidates(): string[] {
    const p = this.#preferred;
    return p ? [p, ...this.#bases.filter((b) => b !== p)] : this.#bases;
  }

  #headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = { Accept: "application/json" };
    if (json) h["Content-Type"] = "application/json";
    if (this.#opts.token) h["Authorization"] = "Bearer " + this.#opts.token;
    if (this.#opts.clusterId) h["X-Lock-Cluster-Id"] = this.#opts.clusterId;
    return h;
  }

  /** Asks every node at once who leads, and prefers the leader named in the highest term. */
  async #discover(signal: AbortSignal | undefined, deadline: number): Promise<void> {
    const limit = Math.max(1, Math.min(this.#attemptMs, deadline - Date.now()));
    const answers = await Promise.all(
      this.#bases.map(async (b) => {
        try {
          const signals = [AbortSignal.timeout(limit)];
          if (signal) signals.push(signal);
          const r = await this.#send!(b + "/v1/status", { method: "GET", headers: this.#headers(false), signal: anySignal(signals) });
          return r.ok ? (JSON.parse(await r.text()) as Status) : undefined;
        } catch {
          return undefined;
        }
      }),
    );
    let best: Status | undefined;
    for (const s of answers) if (s?.leader_http && (!best || s.term > best.term)) best = s;
    if (!best) return;
    const leader = this.#bases.find((b) => b.endsWith("//" + best.leader_http));
    if (leader) {
      this.#preferred = leader;
      this.#stale = false;
    }
  }
}

function base(endpoint: string, tls: boolean): string {
  const e = endpoint.trim().replace(/\/+$/, "");
  if (e === "") throw new LockInvalidError("endpoints", "an empty address");
  return /^https?:\/\//.test(e) ? e : (tls ? "https://" : "http://") + e;
}

function query(q: Record<string, string> | undefined): string {
  return q ? "?" + new URLSearchParams(q).toString() : "";
}

async function errorBody(resp: Reply): Promise<ErrorBody> {
  const text = await resp.text().catch(() => "");
  try {
    const b = JSON.parse(text) as ErrorBody;
    if (typeof b.code === "string") return b;
  } catch {
    // Not the node's body: a proxy in between.
  }
  const code = ({ 400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "not_acquired", 429: "full", 501: "unsupported" } as const)[resp.status];
  return { code: code ?? (resp.status >= 502 && resp.status <= 504 ? "unavailable" : "internal"), message: text.slice(0, 200) };
}

/** Whether err is a refused connection, which never reached the node. */
function refused(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } };
  const code = e?.code ?? e?.cause?.code;
  return code === "ECONNREFUSED" || code === "ENOTFOUND";
}

/** Waits ms, or throws when signal aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The LockNotAcquiredError a 409 answer describes. */
export function notAcquired(a: Answer, key: string): LockNotAcquiredError {
  const ms = a.body.holder_ttl_ms;
  return new LockNotAcquiredError(a.body.key || key, { holder: a.body.holder ?? "", ttl: ms !== undefined && ms > 0 ? ms / 1000 : undefined });
}
