// Run by the `pure` tier alone (vitest.config.mts): its guard (test/pure-setup.ts) is in place, so any process start
// fails with where the file belongs, whichever way it is imported.
import { execFile as namedExecFile, spawnSync } from "node:child_process";
import * as cp from "node:child_process";
import { describe, expect, it } from "vitest";

describe("the pure tier's guard", () => {
  it("a process start fails, saying where the file belongs (named and namespace imports alike)", () => {
    const where =
      /the pure tier starts no process \(child_process\.\w+ was called\): list this test file in vitest\.config\.mts's NEEDS_TOOLS or STARTS_PROCESSES/;
    expect(() => spawnSync("true")).toThrow(where);
    expect(() => namedExecFile("true")).toThrow(where);
    expect(() => cp.spawn("true")).toThrow(where);
    expect(() => cp.execSync("true")).toThrow(where);
  });
});
