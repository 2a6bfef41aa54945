import { z } from "zod";

/** A held-back check: a shell command, or a file assertion. One shape wherever checks are given (CLI, batch, API, MCP). */
export const CommandCheck = z
  .object({
    name: z.string().min(1).max(200).optional(),
    run: z.string().min(1, "a check's `run` must be a non-empty shell command").max(10_000),
    expectExit: z.number().int().min(0).max(255).optional(),
    timeoutSec: z.number().positive().max(3600).optional(),
    /**
     * Held-back files: an absolute path to a folder no worker can see (keep it outside the repository). Its files are
     * copied into the check's folder of the graded checkout just before the checks run (over the worker's files of the
     * same name; read-only while checks run), and never reach a worker's workspace.
     */
    files: z
      .string()
      .min(1)
      .max(4096)
      .refine((p) => p.startsWith("/") && !p.split("/").includes(".."), { message: "a check's `files` must be an absolute path to a folder, without `..`" })
      .optional(),
  })
  .strict();
export type CommandCheck = z.infer<typeof CommandCheck>;

export const FileCheck = z
  .object({
    name: z.string().min(1).max(200).optional(),
    file: z
      .string()
      .min(1)
      .max(1000)
      .refine((p) => !p.startsWith("/") && !p.split(/[\\/]/).includes(".."), {
        message: "a file check's `file` must be a path relative to the workspace, without `..`",
      }),
    exists: z.boolean().optional(),
    equals: z.string().max(1_000_000).optional(),
    matches: z.string().max(10_000).optional(),
  })
  .strict();
export type FileCheck = z.infer<typeof FileCheck>;

export const CheckSpec = z.union([CommandCheck, FileCheck], {
  error: 'a check is {"run": "shell command", expectExit?, timeoutSec?, files?} or {"file": "relative/path", exists?, equals?, matches?}',
});
export type CheckSpec = z.infer<typeof CheckSpec>;

export function checkName(check: CheckSpec, _index: number): string {
  if (check.name) return check.name;
  return "run" in check ? check.run.slice(0, 80) : `file ${check.file}`;
}

export const CheckResult = z.object({
  name: z.string(),
  passed: z.boolean(),
  exitCode: z.number().int().nullable().optional(),
  timedOut: z.boolean().optional(),
  durationMs: z.number().optional(),
  output: z.string(),
});
export type CheckResult = z.infer<typeof CheckResult>;
