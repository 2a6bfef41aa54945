// An endpoint's answer nested just deep enough that the parse thread can clone it back but the engine's thread cannot
// rebuild it (its stack is smaller): the parse must settle (an error), never leave its caller waiting for ever.
import { describe, expect, it } from "vitest";
import { PARSE_INLINE_MAX, parseBody } from "./parse";

describe("parse thread under attack", () => {
  it("answers nested 2,000 to 16,000 deep (padded past the inline size): every parse settles, and the pool parses on after", async () => {
    for (let depth = 2000; depth <= 16_000; depth += 2000) {
      const body = Buffer.from(`${"[".repeat(depth)}${"]".repeat(depth)}${" ".repeat(PARSE_INLINE_MAX)}`);
      const settled = await parseBody(new Uint8Array(body), { kind: "json" }).then(
        () => "parsed",
        (e: Error) => e.message,
      );
      expect(settled).toMatch(/^parsed$|could not be parsed/);
    }
    const ok = Buffer.from(`{"a":[1,2,3]}${" ".repeat(PARSE_INLINE_MAX)}`);
    expect(await parseBody(new Uint8Array(ok), { kind: "json" })).toEqual({ a: [1, 2, 3] });
  }, 30_000);
});
