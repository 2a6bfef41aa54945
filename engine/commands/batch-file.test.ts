// `ocw run --batch FILE`: a file that cannot be read or parsed says what is wrong with it, not the platform's words alone.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseBatch } from "./run";

const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-batch-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("parseBatch", () => {
  it("a missing file is 'no such file', not ENOENT and an open() call", () => {
    const file = path.join(dir, "nope.json");
    expect(() => parseBatch(file)).toThrow(`cannot read the batch file ${file}: no such file`);
  });

  it("a file that is not JSON says so and what it should hold", () => {
    const file = path.join(dir, "bad.json");
    writeFileSync(file, '[{"task": "x",}]');
    expect(() => parseBatch(file)).toThrow(
      new RegExp(
        `^the batch file ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not valid JSON \\(.+\\): write a JSON array of tasks, or \\{"tasks": \\[\\.\\.\\.\\]\\}$`,
      ),
    );
  });

  it("JSON.parse's words quote the file with its line breaks: the message stays one line (it was cut at the first)", () => {
    const file = path.join(dir, "words.json");
    writeFileSync(file, "nope\n");
    let message = "";
    try {
      parseBatch(file);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toContain("\n");
    expect(message).toMatch(/^the batch file .* is not valid JSON \(.+\): write a JSON array of tasks, or \{"tasks": \[\.\.\.\]\}$/);
  });

  it("a file of the wrong shape says what it should hold, not zod's 'expected array, received undefined'", () => {
    const cases: [unknown, string][] = [
      [{ task: "x", dir: "/tmp" }, 'no "tasks" array: write a JSON array of tasks, or {"tasks": [...]} (one task too: [{"task": …, "dir": …}])'],
      [{ tasks: 5 }, '"tasks" must be an array of tasks: {"tasks": [{"task": …, "dir": …}, …]}'],
      ["hello", 'write a JSON array of tasks, or {"tasks": [...]} (one task too: [{"task": …, "dir": …}])'],
    ];
    for (const [content, message] of cases) {
      const file = path.join(dir, "shape.json");
      writeFileSync(file, JSON.stringify(content));
      expect(() => parseBatch(file)).toThrow(`batch file ${file}: ${message}`);
    }
  });
});
