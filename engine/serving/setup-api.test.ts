/** setup.start with a llama-server path typed in the wizard: checked before anything starts, each mistake said plainly. */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { TargetStore } from "../store/targets";
import { SetupApiInputError, setupStartApi } from "./setup-api";

const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-setup-api-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("setup.start llamaServer", () => {
  const store = new TargetStore(path.join(dir, "targets.json"));
  const start = (llamaServer: string) => () => setupStartApi({ llamaServer }, store, () => undefined);

  it("refuses a relative path, a missing file, a folder and a file that is not executable, before any job starts", () => {
    const plain = path.join(dir, "llama-server.txt");
    writeFileSync(plain, "not a program");
    chmodSync(plain, 0o644);
    expect(start("bin/llama-server")).toThrow(SetupApiInputError);
    expect(start("bin/llama-server")).toThrow(/must be absolute on the engine's machine/);
    expect(start(path.join(dir, "nope"))).toThrow(`no llama-server at ${path.join(dir, "nope")} on the engine's machine`);
    expect(start(dir)).toThrow(/is a folder: give the llama-server binary itself/);
    expect(start(plain)).toThrow(/is not executable/);
  });
});
