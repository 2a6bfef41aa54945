import { describe, expect, it } from "vitest";
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
});
