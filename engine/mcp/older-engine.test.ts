// An engine older than the bridge refuses an input field it does not know yet (its inputs are strict): the bridge says
// so as it says a missing route, never in the schema's words; and a client's replacement of an older engine is no
// person's stop (the record a call cut by it reads).
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { lastStop, recordStop, recordUpgrade, stopWasUpgrade } from "../api/lock";
import { messageOf } from "./server";

/** A tRPC client error as the engine's error formatter shapes a refused input (engine/api/router.ts). */
const badInput = (message: string) => Object.assign(new Error(message), { data: { code: "BAD_REQUEST", httpStatus: 400, ocwCode: "bad-input" } });
const older = { pid: 1, instanceId: "i", engine: "0.1.22", client: "0.1.23", atWork: 1 };

describe("messageOf: an input the running engine does not know", () => {
  it("is said as an engine older than this bridge, with both versions and `ocw stop`, never the key's schema words", () => {
    const m = messageOf(badInput('Unrecognized key: "blocked"'), () => {}, "wait", older);
    expect(m).toMatch(/^wait: the running engine \(0\.1\.22; this bridge is 0\.1\.23\) is older than this bridge/);
    expect(m).toContain("restart it with `ocw stop`");
    expect(m).not.toMatch(/Unrecognized|blocked/);
  });
  it("without the versions when the bridge did not compare them", () => {
    const m = messageOf(badInput('Unrecognized keys: "blocked", "also"'), () => {}, "wait");
    expect(m).toMatch(/^wait: the running engine is older than this bridge .*`ocw stop`/);
  });
  it("any other refused input is said as the engine said it", () => {
    expect(messageOf(badInput("task: the task is empty"), () => {}, "delegate", older)).toBe("task: the task is empty");
  });
});

describe("a replacement's stop", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-upgrade-stop-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it("is told from a person's: the replacing client recorded it, for that engine, before its stop", () => {
    recordStop(dir, "`ocw stop`");
    expect(stopWasUpgrade(dir, lastStop(dir)!)).toBe(false);
    recordUpgrade(dir, { at: Date.now(), pid: process.pid, from: "0.1.22", to: "0.1.23" });
    recordStop(dir, "a stop request from another ocw command");
    expect(stopWasUpgrade(dir, lastStop(dir)!)).toBe(true);
    // another engine's stop (a later one, after a restart) is not that replacement
    expect(stopWasUpgrade(dir, { ...lastStop(dir)!, pid: process.pid + 1 })).toBe(false);
  });
});
