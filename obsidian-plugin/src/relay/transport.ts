/**
 * HTTP as the relay client sees it: one function, so the same client runs on Node (global
 * fetch), in Obsidian (`requestUrl`, which has no CORS restrictions, for bounded requests; the
 * native `fetch` only for a held long-poll, which the relay answers with CORS for Obsidian's
 * origins) and in tests.
 */

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  /** True for the long-poll of the change feed (held open by the relay up to `wait` s). */
  longPoll?: boolean;
  timeoutMs: number;
}

export interface HttpResponse {
  status: number;
  /** Header names lowercased. */
  headers: Record<string, string>;
  body: Uint8Array;
}

export type Transport = (req: HttpRequest) => Promise<HttpResponse>;

/** Raised by a transport when no HTTP answer arrived (connection refused, timeout, CORS). */
export class TransportError extends Error {}

/** A transport over the platform's `fetch` (Node 18+, browsers, Obsidian's native fetch). */
export function fetchTransport(fetchFn: typeof fetch = globalThis.fetch.bind(globalThis)): Transport {
  return async (req) => {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), req.timeoutMs);
    try {
      const resp = await fetchFn(req.url, {
        method: req.method,
        headers: req.headers,
        body: req.body as BodyInit | undefined,
        signal: ctl.signal,
      });
      const body = new Uint8Array(await resp.arrayBuffer());
      const headers: Record<string, string> = {};
      resp.headers.forEach((v, k) => {
        headers[k.toLowerCase()] = v;
      });
      return { status: resp.status, headers, body };
    } catch (e) {
      const what = ctl.signal.aborted ? "did not answer in time" : `cannot be reached (${(e as Error).message})`;
      throw new TransportError(what);
    } finally {
      clearTimeout(timer);
    }
  };
}
