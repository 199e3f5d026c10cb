/**
 * HTTP inside Obsidian: `requestUrl` (no CORS restrictions) for every bounded request; the
 * native `fetch` only for the held long-poll, which the relay answers with CORS for Obsidian's
 * origins. If native fetch fails (an older relay without CORS), the long-poll falls back to
 * `requestUrl` for the rest of the session.
 */
import type { RequestUrlParam, RequestUrlResponse } from "obsidian";
import { fetchTransport, type HttpRequest, type HttpResponse, type Transport, TransportError } from "../relay/transport";

export type RequestUrlFn = (req: RequestUrlParam) => Promise<RequestUrlResponse>;

export function obsidianTransport(requestUrl: RequestUrlFn, nativeFetch?: typeof fetch): Transport {
  const viaFetch = nativeFetch ? fetchTransport(nativeFetch) : null;
  let fetchWorks = !!viaFetch;
  const viaRequestUrl = async (req: HttpRequest): Promise<HttpResponse> => {
    const timer = new Promise<never>((_, rej) => setTimeout(() => rej(new TransportError("did not answer in time")), req.timeoutMs));
    try {
      const headers = { ...req.headers };
      const contentType = headers["Content-Type"];
      delete headers["Content-Type"];
      const body = req.body ? (req.body.slice().buffer as ArrayBuffer) : undefined;
      const resp = await Promise.race([
        requestUrl({ url: req.url, method: req.method, headers, body, contentType, throw: false }),
        timer,
      ]);
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(resp.headers ?? {})) out[k.toLowerCase()] = String(v);
      return { status: resp.status, headers: out, body: new Uint8Array(resp.arrayBuffer) };
    } catch (e) {
      if (e instanceof TransportError) throw e;
      throw new TransportError(`cannot be reached (${(e as Error).message})`);
    }
  };
  return async (req) => {
    if (req.longPoll && fetchWorks && viaFetch) {
      try {
        return await viaFetch(req);
      } catch (e) {
        if (!(e instanceof TransportError) || e.message.includes("in time")) throw e;
        fetchWorks = false; // CORS or a webview without fetch: requestUrl from now on
      }
    }
    return viaRequestUrl(req);
  };
}
