// What a client tells the person before a worker starts on their checkout: its uncommitted changes stay behind (the
// worker's repository is made from the last commit). Used by `ocw run` and the MCP bridge (delegate, delegate_batch).
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { counted } from "../../shared/words";

const run = promisify(execFile);

/**
 * A warning when the checkout has uncommitted changes: the worker starts from HEAD and never sees them. Without git's
 * optional locks: a status refreshes the index under index.lock when it can, and the person's own git in that checkout
 * at that moment would fail on the lock ("Another git process seems to be running"). Never rejects.
 */
export async function uncommitted(dir: string): Promise<string | null> {
  let out = "";
  try {
    out = (
      await run("git", ["-C", dir, "--no-optional-locks", "status", "--porcelain", "--untracked-files=normal"], { timeout: 10_000, maxBuffer: 4 * 1024 * 1024 })
    ).stdout;
  } catch {
    return null;
  }
  const files = out
    .split("\n")
    .filter(Boolean)
    .map((l) => l.slice(3));
  if (!files.length) return null;
  return `your checkout has ${counted(files.length, "uncommitted change")} (${files.slice(0, 5).join(", ")}${files.length > 5 ? ", …" : ""}): the worker starts from the last commit and does not see them — commit what it needs before delegating`;
}
