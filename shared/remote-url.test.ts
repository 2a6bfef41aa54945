import { describe, expect, it } from "vitest";
import { urlHasCredentials } from "./remote-url";

describe("urlHasCredentials", () => {
  it("reads a URL's credentials as the URL parser does (without the URL global, which shared/ cannot use)", () => {
    const cases = [
      "http://user:secret@127.0.0.1:8080/v1",
      "https://token@api.example.com/v1",
      "HTTPS://u:p@Example.com",
      "http://127.0.0.1:8080/v1",
      "http://host/path@x",
      "http://host?q=a@b",
      "http://host#a@b",
      "http://a\\b@c/",
      "http://us\ner:p@host/",
      "  http://u:p@host/  ",
      "not a url @ all",
      "git@github.com:o/r.git",
    ];
    for (const c of cases) {
      let parsed = false;
      try {
        const u = new URL(c.trim());
        parsed = !!(u.username || u.password);
      } catch {}
      expect(urlHasCredentials(c), c).toBe(parsed);
    }
  });
});
