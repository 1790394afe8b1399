// The API stream (package api/stream) on Node: the HTTP API's requests
// multiplexed over one connection to each node, as the Go client speaks
// it. A request is a small binary frame carrying its method, path and
// JSON body, answered by a frame with the status and JSON body; the
// frames of one tick go out in one write. A node that does not upgrade
// (an older release) is spoken to in plain HTTP.
import type { Outgoing, Reply, Send } from "./sender.js";

const streamPath = "/v1/stream";
const protocol = "lockcluster-stream/1";
const kindGet = 1;
const kindPost = 2;
const kindCancel = 3;
const maxAnswer = 32 << 20;

interface NodeSocket {
  write(b: Uint8Array): boolean;
  cork(): void;
  uncork(): void;
  destroy(): void;
  setNoDelay(on: boolean): void;
  unref(): void;
  ref(): void;
  on(ev: "data", cb: (b: Uint8Array) => void): void;
  on(ev: "close" | "error", cb: (e?: unknown) => void): void;
  removeListener(ev: "data", cb: (b: Uint8Array) => void): void;
  once(ev: "connect", cb: () => void): void;
  once(ev: "error", cb: (e: unknown) => void): void;
}
interface NodeNet {
  connect(port: number, host: string): NodeSocket;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A Send over the stream for plain-http nodes, falling back to fallback for the rest. */
export async function streamSender(fallback: Send): Promise<Send> {
  const name = "node:net"; // in a variable: neither the type check nor a bundler follows it
  const net = (await import(name)) as NodeNet;
  const conns = new Map<string, Promise<Conn | undefined>>();
  return async (url, init) => {
    const u = new URL(url);
    const auth = init.headers["Authorization"] ?? "";
    const cluster = init.headers["X-Lock-Cluster-Id"] ?? "";
    if (u.protocol !== "http:") return fallback(url, init);
    const key = `${u.host}\n${auth}\n${cluster}`;
    let p = conns.get(key);
    if (!p) {
      p = Conn.open(net, u, init.headers).catch(() => undefined);
      conns.set(key, p);
    }
    const c = await p;
    if (!c) {
      // No stream there (an older node, or the dial failed): plain HTTP,
      // and a new try at the next request after a failed dial.
      conns.delete(key);
      return fallback(url, init);
    }
    if (c.dead) {
      conns.delete(key);
      return fallback(url, init);
    }
    return c.send(init.method, u.pathname + u.search, init.body, init.signal);
  };
}

interface Pending {
  resolve(r: Reply): void;
  reject(e: unknown): void;
}

class Conn {
  dead = false;
  #sock: NodeSocket;
  #next = 1;
  #pending = new Map<number, Pending>();
  #buf = new Uint8Array(0);
  #corked = false;

  private constructor(sock: NodeSocket) {
    this.#sock = sock;
    sock.setNoDelay(true);
    sock.unref(); // an idle stream keeps no process alive
    sock.on("data", (b) => this.#read(b));
    sock.on("error", () => {});
    sock.on("close", () => this.#fail(new Error("stream closed")));
  }

  /** Dials u's host and upgrades; rejects when the node does not upgrade. */
  static open(net: NodeNet, u: URL, headers: Record<string, string>): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const sock = net.connect(Number(u.port || 80), u.hostname);
      let head = "";
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new Error("stream handshake timed out"));
      }, 2000);
      sock.once("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      sock.once("connect", () => {
        let req = `GET ${streamPath} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: Upgrade\r\nUpgrade: ${protocol}\r\n`;
        for (const k of ["Authorization", "X-Lock-Cluster-Id"]) if (headers[k]) req += `${k}: ${headers[k]}\r\n`;
        sock.write(encoder.encode(req + "\r\n"));
      });
      const onData = (b: Uint8Array) => {
        head += latin1(b);
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) return;
        clearTimeout(timer);
        sock.removeListener("data", onData);
        if (!/^HTTP\/1\.1 101 /.test(head)) {
          sock.destroy();
          return reject(new Error("no stream: " + head.slice(0, head.indexOf("\r\n"))));
        }
        const c = new Conn(sock);
        const rest = b.subarray(b.length - (head.length - end - 4));
        if (rest.length) c.#read(rest);
        resolve(c);
      };
      sock.on("data", onData);
    });
  }

  send(method: string, target: string, body: string | undefined, signal: AbortSignal): Promise<Reply> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const id = this.#next++;
    const t = encoder.encode(target);
    const b = body === undefined ? new Uint8Array(0) : encoder.encode(body);
    const head = [...uvarint(id), method === "POST" ? kindPost : kindGet, ...uvarint(t.length)];
    this.#write(head, t, b);
    if (this.#pending.size === 0) this.#sock.ref();
    return new Promise<Reply>((resolve, reject) => {
      const onAbort = () => {
        if (!this.#pending.delete(id)) return;
        if (this.#pending.size === 0) this.#sock.unref();
        if (!this.dead) this.#write([...uvarint(id), kindCancel]);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(id, {
        resolve: (r) => {
          signal.removeEventListener("abort", onAbort);
          resolve(r);
        },
        reject: (e) => {
          signal.removeEventListener("abort", onAbort);
          reject(e);
        },
      });
    });
  }

  /** Writes one frame; the frames of one tick leave in one write. */
  #write(head: number[], ...parts: Uint8Array[]): void {
    const n = head.length + parts.reduce((s, p) => s + p.length, 0);
    const frame = new Uint8Array(uvarint(n).length + n);
    let o = 0;
    for (const x of [uvarint(n), head]) {
      frame.set(x, o);
      o += x.length;
    }
    for (const p of parts) {
      frame.set(p, o);
      o += p.length;
    }
    if (!this.#corked) {
      this.#corked = true;
      this.#sock.cork();
      queueMicrotask(() => {
        this.#corked = false;
        this.#sock.uncork();
      });
    }
    this.#sock.write(frame);
  }

  #read(chunk: Uint8Array): void {
    let buf = this.#buf.length ? concat(this.#buf, chunk) : chunk;
    for (;;) {
      const len = readUvarint(buf, 0);
      if (!len) break;
      if (len.value === 0 || len.value > maxAnswer) return this.#fail(new Error("stream: malformed answer"));
      const end = len.next + len.value;
      if (buf.length < end) break;
      const frame = buf.subarray(len.next, end);
      buf = buf.subarray(end);
      const id = readUvarint(frame, 0);
      const st = id && readUvarint(frame, id.next);
      if (!id || !st) return this.#fail(new Error("stream: malformed answer"));
      const p = this.#pending.get(id.value);
      if (!p) continue; // cancelled
      this.#pending.delete(id.value);
      if (this.#pending.size === 0) this.#sock.unref();
      const text = decoder.decode(frame.subarray(st.next));
      p.resolve({ status: st.value, ok: st.value >= 200 && st.value < 300, text: async () => text });
    }
    this.#buf = buf.length ? buf.slice() : new Uint8Array(0);
  }

  #fail(err: Error): void {
    if (this.dead) return;
    this.dead = true;
    this.#sock.destroy();
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }
}

function uvarint(v: number): number[] {
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

function readUvarint(b: Uint8Array, at: number): { value: number; next: number } | undefined {
  let v = 0;
  let mul = 1;
  for (let i = at; i < b.length && i < at + 8; i++) {
    const x = b[i]!;
    v += (x & 0x7f) * mul;
    if (x < 0x80) return { value: v, next: i + 1 };
    mul *= 128;
  }
  return undefined;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function latin1(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += String.fromCharCode(x);
  return s;
}
