/**
 * Every setup error class is coded with a kind and typed data (shared/errors.ts), and the API sends them beside the
 * code (`ocwKind`, `ocwData`), so clients — the MCP bridge above all — act on the kind, never on the message text.
 */
import { TRPCError } from "@trpc/server";
import { getErrorShape } from "@trpc/server/unstable-core-do-not-import";
import { describe, expect, it } from "vitest";
import { ErrorCode, ErrorKind, OcwError } from "../../shared/errors";
import { appRouter } from "../api/router";
import { EstimateError } from "../models/estimate";
import { DownloadError } from "../models/download";
import { GgufError } from "../models/gguf";
import { MetadataError } from "../models/hparams";
import { listRepoFiles } from "../models/hf";
import { ModelSourceError } from "../models/source";
import { SetupError } from "../models/errors";
import { K8sInputError } from "./k8s";
import { LlamaServerError } from "./llama-server";
import { ParallelInputError } from "./parallel";
import { SetupApiInputError } from "./setup-api";
import { SetupInputError } from "./setup";
import { StartError } from "./start-common";

/** What a client receives for an error a route threw (the router's errorFormatter, as over HTTP). */
function shapeOf(cause: Error) {
  const error = new TRPCError({ code: "BAD_REQUEST", message: cause.message, cause });
  return getErrorShape({ config: appRouter._def._config, error, type: "mutation", path: "setup.start", input: undefined, ctx: undefined }) as {
    message: string;
    data: { ocwCode?: string; ocwKind?: string; ocwData?: Record<string, unknown> };
  };
}

describe("setup errors: coded, kinded, typed data", () => {
  const all: [string, Error][] = [
    ["SetupInputError", new SetupInputError("x")],
    ["SetupApiInputError", new SetupApiInputError("x", { field: "slots" })],
    ["ParallelInputError", new ParallelInputError("x")],
    ["K8sInputError", new K8sInputError("x")],
    ["LlamaServerError", new LlamaServerError("x")],
    ["ModelSourceError", new ModelSourceError("x")],
    ["MetadataError", new MetadataError("x")],
    ["EstimateError", new EstimateError("x")],
    ["DownloadError", new DownloadError("x")],
    ["GgufError", new GgufError("x")],
    ["StartError", new StartError({ kind: "out-of-memory", cause: "x", logLine: "cudaMalloc failed", remedy: "fewer slots", phase: "load" })],
  ];
  it.each(all)("%s carries a code, a kind and data", (_name, e) => {
    expect(e).toBeInstanceOf(OcwError);
    const o = e as OcwError;
    expect(ErrorCode.options).toContain(o.code);
    expect(ErrorKind.options).toContain(o.detail?.kind);
    expect(o.detail?.data).toEqual(expect.any(Object));
  });

  it("a start failure keeps its classification and phase as data, and is unavailable (the machine's), not bad input", () => {
    const e = new StartError({ kind: "out-of-memory", cause: "the plan did not fit", logLine: "cudaMalloc failed", remedy: "fewer slots", phase: "load" });
    expect(e).toBeInstanceOf(SetupError);
    expect([e.code, e.detail]).toEqual([
      "unavailable",
      { kind: "start", data: { failure: "out-of-memory", phase: "load", logLine: "cudaMalloc failed", logFile: null } },
    ]);
    expect(new StartError({ kind: "no-fit", cause: "x", logLine: null, remedy: "y" }).code).toBe("bad-input");
  });

  it("the API sends the kind and data beside the code", () => {
    const s = shapeOf(new StartError({ kind: "disk", cause: "needs 20 GiB more", logLine: null, remedy: "free disk", phase: "download" }));
    expect(s.data).toMatchObject({ ocwKind: "start", ocwData: { failure: "disk", phase: "download" } });
    const n = shapeOf(new OcwError("bad-input", "no active target: run `ocw setup`", { kind: "no-target", data: {} }));
    expect(n.data).toMatchObject({ ocwCode: "bad-input", ocwKind: "no-target" });
    // an error without a kind sends none
    expect(shapeOf(new OcwError("conflict", "busy")).data.ocwKind).toBeUndefined();
  });

  it("the Hub's answers are coded: a missing repo is not-found, a gated one bad input, an outage unavailable", async () => {
    const hub = (status: number) => (async () => new Response("{}", { status })) as unknown as typeof fetch;
    const err = (status: number) => listRepoFiles("org/model", "main", hub(status), {}).catch((e: unknown) => e as SetupError);
    expect(await err(404)).toMatchObject({ code: "not-found", kind: "model-source", data: { repo: "org/model", status: 404 } });
    expect(await err(403)).toMatchObject({ code: "bad-input", kind: "model-source", data: { status: 403 } });
    expect(await err(502)).toMatchObject({ code: "unavailable", kind: "model-source", data: { status: 502 } });
  });
});
