/** Start the real relay (Python, companion/relay) for a test file, on a free loopback port. */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";

const HERE = dirname(fileURLToPath(import.meta.url));

export const REPO = join(HERE, "..", "..");

export class TestRelay {
  url = "";
  private proc!: ChildProcessWithoutNullStreams;
  private lines: string[] = [];
  private waiters: ((l: string) => void)[] = [];

  static async start(): Promise<TestRelay> {
    const r = new TestRelay();
    r.proc = spawn("python3", [join(HERE, "relay-helper.py")], {
      env: { ...process.env, PYTHONPATH: REPO },
    });
    createInterface({ input: r.proc.stdout }).on("line", (l) => {
      const w = r.waiters.shift();
      if (w) w(l);
      else r.lines.push(l);
    });
    let err = "";
    r.proc.stderr.on("data", (d) => (err += d));
    const first = await Promise.race([
      r.next(),
      new Promise<string>((_, rej) => r.proc.on("exit", () => rej(new Error("relay did not start: " + err)))),
    ]);
    r.url = first.split(" ")[1];
    return r;
  }

  private next(): Promise<string> {
    const l = this.lines.shift();
    if (l !== undefined) return Promise.resolve(l);
    return new Promise((res) => this.waiters.push(res));
  }

  /** An invite for a device of `kind` (the relay fixes the kind; default: a person's). */
  async invite(vault?: string, kind: "human" | "agent" = "human"): Promise<string> {
    this.proc.stdin.write(`invite ${kind} ${vault ?? ""}\n`);
    return (await this.next()).split(" ")[1];
  }

  async newVault(kind: "human" | "agent" = "human"): Promise<string> {
    this.proc.stdin.write(`new-vault ${kind}\n`);
    return (await this.next()).split(" ")[1];
  }

  async stop(): Promise<void> {
    this.proc.stdin.end();
    await new Promise((res) => this.proc.on("exit", res));
  }
}
