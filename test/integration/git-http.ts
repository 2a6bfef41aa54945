// A git repository served over smart HTTP by git's own CGI, `git http-backend`, on 127.0.0.1: Claude Code takes
// marketplace sources only as http(s) URLs ending in .git (it refuses git:// and file://) and clones them shallow.
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";

export interface GitHttp {
  /** http://127.0.0.1:PORT/<name>.git for a bare or non-bare repository `<projectRoot>/<name>.git`. */
  url(name: string): string;
  requests: string[];
  close(): Promise<void>;
}

export async function serveGit(projectRoot: string): Promise<GitHttp> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://127.0.0.1");
    requests.push(`${req.method} ${u.pathname}${u.search}`);
    const cgi = spawn("git", ["http-backend"], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: "1",
        REQUEST_METHOD: req.method ?? "GET",
        PATH_INFO: decodeURIComponent(u.pathname),
        QUERY_STRING: u.search.slice(1),
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        ...(req.headers["content-length"] ? { CONTENT_LENGTH: req.headers["content-length"] } : {}),
        ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
        ...(req.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"]) } : {}),
        REMOTE_ADDR: "127.0.0.1",
        SERVER_PROTOCOL: "HTTP/1.1",
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    req.pipe(cgi.stdin);
    // CGI output: headers, a blank line, then the body.
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on("data", (chunk: Buffer) => {
      if (headersDone) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n") >= 0 ? head.indexOf("\r\n\r\n") : head.indexOf("\n\n");
      if (end < 0) return;
      const sep = head[end] === 13 ? 4 : 2;
      const lines = head.subarray(0, end).toString().split(/\r?\n/);
      let status = 200;
      for (const line of lines) {
        const i = line.indexOf(":");
        if (i < 0) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === "status") status = Number.parseInt(v, 10) || 200;
        else res.setHeader(k, v);
      }
      res.writeHead(status);
      headersDone = true;
      res.write(head.subarray(end + sep));
    });
    let err = "";
    cgi.stderr.on("data", (b) => (err += b.toString()));
    cgi.on("close", (code) => {
      if (!headersDone) {
        res.writeHead(500);
        res.write(`git http-backend exited ${code}: ${err}`);
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (name) => `http://127.0.0.1:${port}/${path.posix.basename(name).replace(/\.git$/, "")}.git`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
