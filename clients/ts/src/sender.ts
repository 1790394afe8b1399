// How the transport sends one request: the platform's fetch, or on Node
// its own http module with a keep-alive pool, which costs a fraction of
// fetch's time per request there (undici's streams): what makes the
// client's cycles comparable to the Go client's.

/** The part of a fetch Response the transport reads. */
export interface Reply {
  status: number;
  ok: boolean;
  text(): Promise<string>;
}

/** The part of fetch's RequestInit the transport gives. */
export interface Outgoing {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export type Send = (url: string, init: Outgoing) => Promise<Reply>;

/** fetch as a Send. */
export function fetchSender(f: typeof fetch): Send {
  return (url, init) => f(url, { ...init, redirect: "manual" });
}

interface NodeHTTP {
  Agent: new (o: object) => unknown;
  request(url: string, o: object, cb: (res: NodeIncoming) => void): NodeOutgoing;
}
interface NodeIncoming {
  statusCode?: number;
  setEncoding(e: string): void;
  on(ev: "data", cb: (s: string) => void): void;
  on(ev: "end" | "error", cb: (e?: unknown) => void): void;
}
interface NodeOutgoing {
  on(ev: "error", cb: (e: unknown) => void): void;
  end(body?: string): void;
}

/** On Node (not Bun or Deno, whose fetch is native), a Send of node:http and node:https; undefined elsewhere. */
export async function nodeSender(): Promise<Send | undefined> {
  const g = globalThis as { process?: { versions?: { node?: string; bun?: string } }; Deno?: unknown };
  if (!g.process?.versions?.node || g.process.versions.bun || g.Deno) return undefined;
  // Names in variables: neither the type check nor a bundler follows them.
  const names = ["node:http", "node:https"];
  const [http, https] = (await Promise.all(names.map((n) => import(n)))) as [NodeHTTP, NodeHTTP];
  const agents = [http, https].map((m) => new m.Agent({ keepAlive: true, maxSockets: 256, scheduling: "lifo" }));
  return (url, init) =>
    new Promise<Reply>((resolve, reject) => {
      const tls = url.startsWith("https:");
      const req = (tls ? https : http).request(url, { method: init.method, headers: init.headers, signal: init.signal, agent: agents[tls ? 1 : 0] }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (s) => (body += s));
        res.on("error", reject);
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          resolve({ status, ok: status >= 200 && status < 300, text: async () => body });
        });
      });
      req.on("error", reject);
      req.end(init.body);
    });
}
