// `ocw run --endpoint URL`: a URL that cannot work is refused before anything is saved, and said without its secret.
import { describe, expect, it } from "vitest";
import { InputError } from "../../shared/errors";
import { adhocTarget, checkEndpointUrl, connectWithTarget } from "./target-flags";

describe("--endpoint", () => {
  it("a user:password@ in the URL is refused and never quoted (fetch refuses it; the message quoted it whole)", () => {
    const go = () => adhocTarget("http://user:s3cret@127.0.0.1:8080/v1", "m");
    expect(go).toThrow(InputError);
    expect(go).toThrow("--endpoint http://***@127.0.0.1:8080/v1 holds credentials");
    try {
      go();
    } catch (err) {
      expect((err as Error).message).not.toContain("s3cret");
    }
  });
  it("a query or fragment is refused (the target's URL was '…?key=s/v1'), other schemes too; a bad URL is quoted without credentials", () => {
    expect(() => adhocTarget("http://127.0.0.1:8080/v1?key=s3cret", "m")).toThrow("--endpoint http://127.0.0.1:8080/v1 has a query or fragment");
    expect(() => adhocTarget("ftp://127.0.0.1/v1", "m")).toThrow("is not an http(s) URL");
    expect(() => checkEndpointUrl("--endpoint", "http://u:s3cret@[bad")).toThrow(/^--endpoint http:\/\/\*\*\*@\[bad is not a URL/);
  });
  it("a plain base URL still makes the target, /v1 added when missing", () => {
    expect(adhocTarget("http://127.0.0.1:8080", "m").endpoint).toBe("http://127.0.0.1:8080/v1");
    expect(adhocTarget("https://api.example.com/v1/", "m").endpoint).toBe("https://api.example.com/v1");
    expect(adhocTarget("http://127.0.0.1:8080/", "m").endpoint).toBe("http://127.0.0.1:8080/v1");
  });
  it("a base URL with a path of its own is used as given, as `ocw setup --provider` uses it (it got /v1 appended)", () => {
    expect(adhocTarget("https://generativelanguage.googleapis.com/v1beta/openai", "m").endpoint).toBe(
      "https://generativelanguage.googleapis.com/v1beta/openai",
    );
    expect(adhocTarget("https://api.groq.com/openai/v1", "m").endpoint).toBe("https://api.groq.com/openai/v1");
  });
});

describe("--api-key-env", () => {
  it("a key given in place of the variable's name is refused without echoing it (before any engine starts)", async () => {
    const err = await connectWithTarget({ endpoint: "http://127.0.0.1:9/v1", model: "m", apiKeyEnv: "sk-live-s3cretkey" }, "cli:ocw run").catch(
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('--api-key-env takes the NAME of an environment variable (got "sk-l…")');
    expect((err as Error).message).not.toContain("s3cret");
  });
});
