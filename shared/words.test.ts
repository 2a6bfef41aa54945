// Counts and lost connections as a person reads them (shared/words.ts), and no "worker(s)" left in a message.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { counted, ENGINE_NO_ANSWER, engineErrorText, isNoAnswer } from "./words";

describe("counted", () => {
  it("one is singular, others plural; an irregular plural can be given", () => {
    expect(counted(1, "worker")).toBe("1 worker");
    expect(counted(0, "worker")).toBe("0 workers");
    expect(counted(2, "unmerged commit")).toBe("2 unmerged commits");
    expect(counted(2, "batch", "batches")).toBe("2 batches");
  });
});

describe("engineErrorText: a request that got no answer says what happened and what to do", () => {
  it.each([
    "Failed to fetch",
    "TypeError: Failed to fetch",
    "fetch failed",
    "NetworkError when attempting to fetch resource.",
    "Load failed",
    "connect ECONNREFUSED 127.0.0.1:4000",
    "socket hang up",
  ])("%s", (raw) => {
    expect(isNoAnswer(raw)).toBe(true);
    const text = engineErrorText(raw);
    expect(text.startsWith(ENGINE_NO_ANSWER)).toBe(true);
    expect(text).toMatch(/start it with `ocw serve` \(or reopen the app\), then try again/);
    expect(text).not.toMatch(/TypeError/);
    expect(text).toContain(raw.replace(/^TypeError: /, ""));
  });

  it("names the address when it is known", () => {
    expect(engineErrorText("fetch failed", "http://127.0.0.1:4000")).toMatch(/^the engine did not answer at http:\/\/127\.0\.0\.1:4000 \(fetch failed\)/);
  });

  it("leaves the engine's own words (and another server's failure, already named) as they are", () => {
    for (const msg of ["worker w1 was already merged", "could not reach http://gpu:8080/v1: ECONNREFUSED", "the provider answered 401"]) {
      expect(isNoAnswer(msg)).toBe(false);
      expect(engineErrorText(msg)).toBe(msg);
    }
  });
});

/** Every non-test source file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    if (statSync(p).isDirectory()) return n === "node_modules" ? [] : sources(p);
    return /\.tsx?$/.test(n) && !/\.test\.tsx?$/.test(n) ? [p] : [];
  });
}

describe("messages say how many in words: no `${n} worker(s)` where the count is known", () => {
  it("engine/, shared/ and the renderer use counted() instead", () => {
    const root = path.dirname(path.dirname(new URL(import.meta.url).pathname));
    const found: string[] = [];
    for (const file of ["engine", "shared", "renderer/src"].flatMap((d) => sources(path.join(root, d)))) {
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, i) => {
          // "http(s) URL" is a scheme, not a count.
          // A template's `${n} …(s)`, or JSX's `{n} …(s)`.
          if (/\$?\{[^{}`]+\} (?:[A-Za-z-]+ ){0,2}(?!https?\()[A-Za-z-]+\(s\)/.test(line)) found.push(`${path.relative(root, file)}:${i + 1}`);
        });
    }
    expect(found).toEqual([]);
  });
});
