/** A Node `http` transport for DOM tests (happy-dom's fetch applies a page's CORS rules). */
import { request } from "node:http";
import { type Transport, TransportError } from "../src/relay/transport";

export const httpTransport: Transport = (req) =>
  new Promise((resolve, reject) => {
    const r = request(req.url, { method: req.method, headers: req.headers, timeout: req.timeoutMs }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (d: Buffer) => parts.push(d));
      res.on("end", () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : String(v);
        resolve({ status: res.statusCode ?? 0, headers, body: new Uint8Array(Buffer.concat(parts)) });
      });
    });
    r.on("timeout", () => r.destroy(new Error("timeout")));
    r.on("error", (e) => reject(new TransportError(`cannot be reached (${e.message})`)));
    if (req.body) r.write(req.body);
    r.end();
  });
