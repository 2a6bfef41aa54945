// Attack pass 2: one edit ask that names several files (opencode's apply_patch, given to `gpt-*` models instead of
// edit/write; its `what` is the names joined with ", ", and a move's target is only in its metadata). Each file is
// inspected by real path: a symlink into a sibling's workspace among them flags the whole ask. Before the fix the
// joined names were resolved as one path (inside, no flag) and a careless approval wrote into the sibling's workspace
// (test/integration/attack-pass-2.test.ts shows that with the real opencode). An approving policy rule matched the joined
// names whole too (`src/**` answered an ask also writing `.github/workflows/ci.yml`).
import type { PermissionRequest } from "@opencode-ai/sdk/v2";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { permissionAsk } from "../harness/translate";
import { localTarget } from "../net";
import { inspectAsk, ruleMatches } from "./inspect";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-inspect-2-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const ws = path.join(tmp, "w-a");
const sibling = path.join(tmp, "w-b");
mkdirSync(path.join(ws, "src"), { recursive: true });
mkdirSync(sibling);
symlinkSync(sibling, path.join(ws, "sib"));
const at = { worktree: ws, cwd: ws };
const free = { scope: [], protect: [] };

/** The permission.asked opencode 1.18.33's apply_patch sends (patterns: the files relative to the worktree, moves left out). */
function applyPatchAsk(files: { filePath: string; movePath?: string }[]): PermissionRequest {
  return {
    id: "per_1",
    sessionID: "ses_1",
    permission: "edit",
    patterns: files.map((f) => path.relative(ws, f.filePath)),
    always: ["*"],
    metadata: { filepath: files.map((f) => path.relative(ws, f.filePath)).join(", "), diff: "", files },
  } as unknown as PermissionRequest;
}

describe("an edit ask of several files", () => {
  it("every file is inspected: one through a symlink into a sibling's workspace flags the ask outside", () => {
    const ask = permissionAsk("w-a", applyPatchAsk([{ filePath: path.join(ws, "notes.txt") }, { filePath: path.join(ws, "sib", "src", "app.py") }]));
    expect(ask.what).toBe("notes.txt, sib/src/app.py");
    expect(inspectAsk(ask, at, free).map((f) => f.kind)).toEqual(["symlink", "outside-workspace"]);
  });

  it("a move's target (only in the metadata, not in the patterns) is inspected too", () => {
    const ask = permissionAsk("w-a", applyPatchAsk([{ filePath: path.join(ws, "src", "a.txt"), movePath: path.join(ws, "sib", "moved.txt") }]));
    expect(ask.patterns).toEqual(["src/a.txt"]);
    expect(ask.paths).toEqual([path.join(ws, "src", "a.txt"), path.join(ws, "sib", "moved.txt")]);
    expect(inspectAsk(ask, at, free).map((f) => f.kind)).toContain("outside-workspace");
  });

  it("protected and out-of-scope files among several are flagged; files all inside and in scope are not", () => {
    const ask = permissionAsk("w-a", applyPatchAsk([{ filePath: path.join(ws, "src", "a.ts") }, { filePath: path.join(ws, "tests", "t.py") }]));
    expect(inspectAsk(ask, at, { scope: ["src/**", "tests/**"], protect: ["tests/**"] }).map((f) => f.kind)).toEqual(["protected"]);
    expect(inspectAsk(ask, at, { scope: ["src/**"], protect: [] }).map((f) => f.kind)).toEqual(["out-of-scope"]);
    expect(inspectAsk(ask, at, { scope: ["src/**", "tests/**"], protect: [] })).toEqual([]);
  });

  it("an ask of one file (edit, write) keeps its one path, as before", () => {
    const one = permissionAsk("w-a", {
      id: "per_2",
      sessionID: "ses_1",
      permission: "edit",
      patterns: ["sib/x.txt"],
      always: ["*"],
      metadata: { filepath: path.join(ws, "sib", "x.txt"), diff: "" },
    } as unknown as PermissionRequest);
    expect(one.paths).toBeUndefined();
    expect(inspectAsk(one, at, free).map((f) => f.kind)).toEqual(["symlink", "outside-workspace"]);
  });
});

describe("a policy rule on an edit ask of several files", () => {
  const ask = (names: string[]) => permissionAsk("w-a", applyPatchAsk(names.map((n) => ({ filePath: path.join(ws, n) })))) as Parameters<typeof ruleMatches>[0];
  it("an approving rule answers only when it matches every file (not the joined names, which `src/**` matches whole)", () => {
    const two = ask(["src/a.ts", ".github/workflows/ci.yml"]);
    expect(two.what).toBe("src/a.ts, .github/workflows/ci.yml");
    for (const pattern of ["src/**", "**/src/**"]) expect(ruleMatches(two, { pattern, decision: "once" }), pattern).toBe(false);
    expect(ruleMatches(ask(["src/a.ts", "src/b.ts"]), { pattern: "**/src/**", decision: "once" })).toBe(true);
  });
  it("a rejecting rule answers when it matches any file", () => {
    expect(ruleMatches(ask(["src/a.ts", ".github/workflows/ci.yml"]), { pattern: "**/.github/**", decision: "reject" })).toBe(true);
    expect(ruleMatches(ask(["src/a.ts", "src/b.ts"]), { pattern: "**/.github/**", decision: "reject" })).toBe(false);
  });
});

describe("a webfetch of this machine or its private network", () => {
  it("loopback, private, link-local and CGNAT addresses in any spelling the URL parser takes, and local names: refused with why", () => {
    for (const url of [
      "http://127.0.0.1:8080/",
      "http://localhost/",
      "http://api.localhost./x",
      "http://[::1]:3000/",
      "http://10.0.0.5/",
      "http://172.20.1.1/",
      "http://192.168.1.1/admin",
      "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
      "http://0.0.0.0:9000/",
      "http://100.64.0.1/",
      "http://2130706433/",
      "http://0x7f.1/",
      "http://[::ffff:127.0.0.1]/",
      "http://[fe80::1]/",
      "http://[fd00::1]/",
      "http://metadata.google.internal/computeMetadata/v1/",
      "http://nas:5000/",
      "http://printer.local/",
    ])
      expect(localTarget(url), url).toMatch(/local or private network address/);
  });
  it("public names and addresses, and what is not a URL (opencode refuses that itself): not refused here", () => {
    for (const url of ["https://docs.python.org/3/", "https://8.8.8.8/", "https://[2606:4700::1111]/", "http://172.32.0.1/", "not a url"])
      expect(localTarget(url), url).toBeNull();
  });
});
