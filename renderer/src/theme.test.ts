import { describe, expect, it } from "vitest";
import { parseThemePref, resolveTheme } from "./theme";

describe("theme", () => {
  it("a stored choice is read back; anything else is the system's", () => {
    expect(parseThemePref("dark")).toBe("dark");
    expect(parseThemePref("light")).toBe("light");
    expect(parseThemePref(null)).toBe("system");
    expect(parseThemePref("purple")).toBe("system");
  });
  it("system follows the system's scheme; light and dark do not", () => {
    expect(resolveTheme("system", true)).toBe("dark");
    expect(resolveTheme("system", false)).toBe("light");
    expect(resolveTheme("light", true)).toBe("light");
    expect(resolveTheme("dark", false)).toBe("dark");
  });
});
