// Names in a worker's commit that differ from another name of the tree only in case or in Unicode normalisation
// (`Tests/x.py` beside `tests/x.py`, NFC beside NFD): git keeps both, but a checkout on macOS or Windows holds one of
// them, whichever was written last. Before the fix, flaggedChanges (grading's flags, the merge's acceptance) said nothing.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commitFiles, committedRepo } from "../../test/fixtures/git-repo";
import { gradedIn } from "../../test/fixtures/graded";
import { flaggedChanges } from "./land";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-collide-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

const head = (r: string) => execFileSync("git", ["-C", r, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
const collisions = async (r: string, base: string, commit: string, beside?: string[]) =>
  (await flaggedChanges(r, base, commit, undefined, undefined, beside)).filter((f) => f.kind === "name-collision");

describe("names that are one file on macOS or Windows", () => {
  it("Tests/x.py beside the base's tests/x.py, and a README.md beside a readme.MD of its own commit: flagged, naming the other spelling", async () => {
    const r = committedRepo(path.join(tmp, `repo-${n++}`), { "tests/x.py": "a\n", "calc.py": "x\n" });
    const base = head(r);
    const commit = commitFiles(r, base, { "Tests/x.py": "b\n", "README.md": "r\n", "readme.MD": "s\n", "calc.py": "y\n" });
    const flags = await collisions(r, base, commit);
    expect(flags.map((f) => f.path).sort()).toEqual(["README.md", "Tests/x.py", "readme.MD"]);
    expect(flags.find((f) => f.path === "Tests/x.py")!.detail).toMatch(/^its folder "Tests" and "tests" differ only in case or Unicode normalisation/);
    expect(flags.find((f) => f.path === "README.md")!.detail).toMatch(/^its name and "readme\.MD" differ only/);
  });

  it("an NFD name beside the NFC one, and a trailing dot (Windows): flagged; distinct names and a change of the one file are not", async () => {
    const nfc = "caf\u00e9.txt";
    const nfd = "cafe\u0301.txt";
    const r = committedRepo(path.join(tmp, `repo-${n++}`), { [nfc]: "a\n", "notes.txt": "n\n" });
    const base = head(r);
    const flags = await collisions(r, base, commitFiles(r, base, { [nfd]: "b\n", "notes.txt.": "m\n" }));
    expect(flags.map((f) => f.path)).toEqual([nfd, "notes.txt."].sort((a, b) => (a < b ? -1 : 1)));
    expect(await collisions(r, base, commitFiles(r, base, { [nfc]: "changed\n", "other.txt": "o\n" }))).toEqual([]);
  });

  it("at a merge, a name the person's branch added since the base counts too", async () => {
    const r = committedRepo(path.join(tmp, `repo-${n++}`), { "a.txt": "a\n" });
    const base = head(r);
    const person = commitFiles(r, base, { "docs/Guide.md": "p\n" });
    const worker = commitFiles(r, base, { "docs/guide.md": "w\n" });
    expect(await collisions(r, base, worker)).toEqual([]);
    expect((await collisions(r, base, worker, [person])).map((f) => f.path)).toEqual(["docs/guide.md"]);
  });

  it("at grading: a built verdict carries the flag (merged only after an explicit acceptance)", async () => {
    const graded = gradedIn(tmp);
    const v = await graded(
      { "tests/x.py": "a\n" },
      (ws) => {
        mkdirSync(path.join(ws, "Tests"));
        writeFileSync(path.join(ws, "Tests", "x.py"), "b\n");
      },
      [{ run: "true" }],
    );
    expect(v.verdict).toBe("built");
    expect(v.flags).toEqual([expect.objectContaining({ path: "Tests/x.py", kind: "name-collision" })]);
  }, 60_000);
});
