// What `ocw grants` prints of a grant: its tool and pattern are what a worker asked for (the model's words), shown as
// `ocw asks` shows an ask's, never an escape sequence or a bidi control on the terminal.
import { describe, expect, it } from "vitest";
import { grantWords } from "./grants";

const RAW = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/;

describe("a grant on the terminal", () => {
  it("a tool name that is not a plain name is quoted and labelled as the model's, as `ocw asks` does", () => {
    const t = grantWords({ tool: "bash\u001b]52;c;eA==\u0007\u202e", pattern: "npm test" });
    expect(t).toBe('(a tool name the model chose, untrusted: "bash⟪U+001B⟫]52;c;eA==⟪U+0007⟫⟪U+202E⟫") npm test');
    expect(t).not.toMatch(RAW);
  });
  it("a plain tool name as it is; the pattern made safe, a path in the workspace as the repository's", () => {
    expect(grantWords({ tool: "edit", pattern: "/ws/w-1/src/a\u202e.ts" }, "/ws/w-1")).toBe("edit src/a⟪U+202E⟫.ts");
  });
});
