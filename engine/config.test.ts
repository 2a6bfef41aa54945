import { describe, expect, it, vi } from "vitest";
import { config, ConfigSchema } from "./config";

describe("config: every OCW_* variable in one place", () => {
  it("defaults, values, and a malformed value falls back instead of crashing", () => {
    expect(config({})).toMatchObject({ OCW_STALL_SEC: 300, OCW_RETENTION_DAYS: 14, OCW_NO_SANDBOX: false });
    expect(config({}).OCW_STATE_DIR).toBeUndefined();
    expect(config({ OCW_STALL_SEC: "12", OCW_NO_SANDBOX: "1", OCW_STATE_DIR: "/x" })).toMatchObject({
      OCW_STALL_SEC: 12,
      OCW_NO_SANDBOX: true,
      OCW_STATE_DIR: "/x",
    });
    expect(config({ OCW_STALL_SEC: "soon", OCW_NO_SANDBOX: "yes please" })).toMatchObject({ OCW_STALL_SEC: 300, OCW_NO_SANDBOX: false });
  });

  it("every variable says what it is for", () => {
    for (const [name, schema] of Object.entries(ConfigSchema.shape)) expect(schema.description, name).toBeTruthy();
  });

  it("parses again only when one of its variables changed; a change is seen by the next call, a returned config is the caller's own", () => {
    const parse = vi.spyOn(ConfigSchema, "parse");
    try {
      const env: NodeJS.ProcessEnv = { OCW_STALL_SEC: "12", HOME: "/h" };
      for (let i = 0; i < 50; i++) expect(config(env).OCW_STALL_SEC).toBe(12);
      expect(parse).toHaveBeenCalledTimes(1);
      env.HOME = "/elsewhere"; // not one of its variables
      config(env).OCW_STALL_SEC = 1;
      expect(config(env).OCW_STALL_SEC).toBe(12);
      expect(parse).toHaveBeenCalledTimes(1);
      env.OCW_STALL_SEC = "13";
      expect(config(env).OCW_STALL_SEC).toBe(13);
      env.OCW_STATE_DIR = "";
      expect(config(env).OCW_STATE_DIR).toBeUndefined();
      delete env.OCW_STATE_DIR;
      env.OCW_NO_SANDBOX = "1";
      expect(config(env)).toMatchObject({ OCW_STALL_SEC: 13, OCW_NO_SANDBOX: true });
      expect(config({})).toMatchObject({ OCW_STALL_SEC: 300, OCW_NO_SANDBOX: false });
      expect(parse).toHaveBeenCalledTimes(5);
    } finally {
      parse.mockRestore();
    }
  });
});
