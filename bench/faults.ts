// The fault and attack suite as one table: runs the suite's own test files (vitest, JSON reporter) and reads each test's
// result against what it injects and what it asserts holds. "records lost" and "escapes" are 0 only where that test
// passed and asserts it (a failed test shows as failed, a skipped one with its reason); "–" where the test is about
// something else.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { findLlamaServer } from "../engine/serving/llama-server";
import { round } from "./stats";

export const FAULT_FILES = [
  "test/integration/faults.test.ts",
  "test/integration/faults-disk.test.ts",
  "test/integration/faults-engine-kill.test.ts",
  "test/integration/faults-mcp-fuzz.test.ts",
  "test/integration/faults-model-server.test.ts",
  "test/integration/recovery.test.ts",
  "test/integration/containment.test.ts",
  "test/integration/grants.test.ts",
  "test/integration/serve-sandbox.test.ts",
  "engine/grading/gaming.test.ts",
  "engine/sandbox/sandbox.test.ts",
  "engine/sandbox/cgroup.test.ts",
  "engine/sandbox/cgroup-v2.test.ts",
  "engine/net/bounded.test.ts",
  "engine/net/parse.test.ts",
  "engine/models/hub-bounded.test.ts",
  "engine/workspace/workspace-attack.test.ts",
  "engine/workers/publish-attack.test.ts",
  "engine/net/parse-attack.test.ts",
];

interface Entry {
  match: RegExp;
  injected: string;
  times: string;
  held: string;
  /** The test asserts that no record (worker, event, verdict, approval) is lost. */
  lost?: boolean;
  /** The test asserts that nothing got out (no write outside, no secret read, no tampered verdict built). */
  escapes?: boolean;
}

const CATALOG: Entry[] = [
  {
    match: /endpoint answering 500/,
    injected: "model endpoint answers HTTP 500",
    times: "every call of 1 worker",
    held: "worker ends in error with the reason; nothing hangs",
  },
  {
    match: /hangs mid-response/,
    injected: "model hangs mid-response",
    times: "1 worker",
    held: "the 6 s wall-clock budget stops it with its reason; engine healthy",
  },
  { match: /stream closed mid-response/, injected: "model closes the stream mid-response", times: "1 worker", held: "clear error state" },
  {
    match: /malformed tool call is counted/,
    injected: "malformed tool call from the model",
    times: "1 worker",
    held: "counted per worker; the worker goes on to built",
  },
  {
    match: /write outside its worktree is denied/,
    injected: "write tool outside the workspace",
    times: "1 worker",
    held: "denied by the agent's rules, never asked; nothing written",
    escapes: true,
  },
  {
    match: /shell commands that write outside/,
    injected: "shell writes outside (path argument, redirect), every ask approved",
    times: "2 routes",
    held: "nothing written; the redirect refused by the engine on the record",
    escapes: true,
  },
  {
    match: /protected file rewritten/,
    injected: "protected check rewritten by an approved shell command",
    times: "1 worker",
    held: "scope failure; the built claim recorded as dishonest",
    escapes: true,
  },
  {
    match: /1,000 malformed or hostile API requests/,
    injected: "malformed / hostile / unauthenticated API requests",
    times: "1,000",
    held: "each a 4xx with a message; engine up; RSS growth < 150 MB",
  },
  {
    match: /full disk.*while a worker waits|while a worker waits on an ask/,
    injected: "state dir on a full tmpfs while an ask waits",
    times: "every recording call",
    held: "each fails saying the disk is full; nothing half-done; engine up",
    lost: true,
  },
  {
    match: /once space is freed/,
    injected: "(after the full disk) space freed",
    times: "1 stuck + 1 new worker",
    held: "stuck worker stops and resumes to built; a new one is built",
    lost: true,
  },
  {
    match: /after a restart on the same state dir/,
    injected: "(after the full disk) engine restart",
    times: "1",
    held: "every worker listed with the state its log holds",
    lost: true,
  },
  {
    match: /of the engine: back within 2 s/,
    injected: "kill -9 of the engine mid-batch (MCP client and event subscriber attached)",
    times: "1 kill, 4-worker batch",
    held: "back < 2 s on the same address; no event missed; no verdict or approval lost; interrupted workers resume to built",
    lost: true,
  },
  {
    match: /of opencode serve: the waiting workers/,
    injected: "kill -9 of opencode serve mid-batch",
    times: "1 kill, 4-worker batch",
    held: "waiting workers interrupted, their asks cancelled and recorded; verdicts kept; all resume to built",
    lost: true,
  },
  {
    match: /malformed or hostile tool calls/,
    injected: "malformed / hostile MCP tool calls",
    times: "1,000+",
    held: "each a result or an error with a message; bridge and engine up; memory bounded",
  },
  {
    match: /raw junk on stdin/,
    injected: "raw junk on the bridge's stdin",
    times: "a stream of junk lines",
    held: "JSON-RPC errors where due; the bridge still initializes and lists tools",
  },
  {
    match: /kill -9 of the model server|interrupted at once with the reason/,
    injected: "kill -9 of llama-server mid-batch",
    times: "1",
    held: "its workers interrupted with the reason; another's approval survives; resume after restart",
    lost: true,
  },
  {
    match: /8 workers in 8 worktrees/,
    injected: "8 workers on 4 slots",
    times: "8",
    held: "never more than 4 at once; all graded; no file outside its own workspace",
    escapes: true,
  },
  {
    match: /kill -9 of opencode serve mid-run/,
    injected: "kill -9 of opencode serve mid-run",
    times: "1",
    held: "interrupted within 2 s; serve restarted; resume completes in the same session",
    lost: true,
  },
  {
    match: /kill -9 of the engine → a new engine/,
    injected: "kill -9 of the engine",
    times: "1",
    held: "a new engine lists every worker with state, verdict and approval history; the interrupted one resumes",
    lost: true,
  },
  {
    match: /every escape route/,
    injected:
      "escape attacks (computed ../ to the token, ~/.ssh, /proc environ, env dump, python/sh -c/1<>/>& writes, git -C on the user's repo, curl to the API, other workers' logs, symlink write, background job), every ask approved",
    times: "13 attack steps",
    held: "user repo byte-for-byte unchanged; nothing written outside; no key, token, secret or held-back check reaches the model; the background job dies with its command",
    escapes: true,
  },
  {
    match: /"always" is the engine's grant/,
    injected: 'an "always" on `echo hi`, then `echo pwned > outside`',
    times: "3 asks",
    held: "later asks still reach the engine; the outside write is contained; the grant is revocable",
    escapes: true,
  },
  {
    match: /\.git pointing at the user's repository/,
    injected: ".git file pointing at the user's .git",
    times: "1",
    held: "the engine's commit never lands on the user's branch; the published branch is the graded commit",
    escapes: true,
  },
  {
    match: /--skip-worktree on a protected test/,
    injected: "--skip-worktree on a protected test + an ignored build artifact",
    times: "2 tamperings",
    held: "not graded built; both found",
    escapes: true,
  },
  {
    match: /`npm test` granted always/,
    injected: '"always" on `npm test`, then `npm test; touch pwned`, `&& touch`, `$(touch …)`, `|| true; touch`, a second line',
    times: "5 chained commands",
    held: "each went to a person (none answered by the grant); nothing written; the grant is the exact command, not opencode's `npm test *`",
    escapes: true,
  },
  {
    match: /over MCP \(a real client/,
    injected: "a bidi-isolate command (`npm test ⁧⁦ ; rm -rf src ⁩⁦ #⁩⁩`) and a two-line command, read over MCP",
    times: "2 asks",
    held: 'shown with ⟪U+XXXX⟫ and ⏎ markers; "always" refused where it cannot mean what it says',
    escapes: true,
  },
  {
    match: /pytest\.py that shadows the runner/,
    injected: "a top-level pytest.py that exits 0",
    times: "1 worker",
    held: "a check-configuration violation: not built",
    escapes: true,
  },
  {
    match: /conftest\.py hook/,
    injected: "a conftest.py hook in the tests folder",
    times: "1 worker",
    held: "a check-configuration violation: not built",
    escapes: true,
  },
  {
    match: /package\.json test script rewritten/,
    injected: "package.json's test script rewritten to exit 0",
    times: "1 worker",
    held: "a check-configuration violation: not built (a new dependency is not one)",
    escapes: true,
  },
  {
    match: /held-back files: copied in only at grading/,
    injected: "the worker's own copy of a held-back test, and a symlink where held-back files go",
    times: "2 tamperings",
    held: "the held-back test replaces the worker's; the symlink is removed, never followed",
    escapes: true,
  },
  {
    match: /paths the worker saw/,
    injected: "code that passes only where its path, HOME or TMPDIR says `grading`",
    times: "1 check",
    held: "the checks run at the worker's own paths; no grading folder is visible",
    escapes: true,
  },
  {
    match: /one worker cannot write into another's workspace/,
    injected: "worker A's bash call with a workdir symlinked to worker B's workspace; cd into the link, B's absolute path, list/glob/read/write through it",
    times: "6 routes, every ask approved",
    held: "B's workspace unchanged; the outside workdir refused before anyone is asked",
    escapes: true,
  },
  {
    match: /see no credential of \$HOME/,
    injected: "decoy credentials in a test HOME (9 tools' token files, another project's .env), other workers' transcripts, host Unix sockets",
    times: "1 worker, every ask approved",
    held: "none readable from a worker command or a check; no socket reachable",
    escapes: true,
  },
  {
    match: /a file tool never runs beside a bash command/,
    injected: "a symlink swapped by a parallel bash call between the engine's path check and opencode's file tool",
    times: "1 race",
    held: "a file tool and a bash command of one workspace never overlap: the checked path is the path used",
    escapes: true,
  },
  {
    match: /limits that bind as root/,
    injected: "a fork loop and processes allocating past the command's memory, as root (RLIMIT_NPROC does not bind root)",
    times: "1 worker command",
    held: "stopped at its own cgroup's pids and memory limits; the group is gone afterwards",
    escapes: true,
  },
  {
    match: /snapshot caps/,
    injected: "more generated files than the snapshot cap",
    times: "1 worker",
    held: "not graded built and not published; a snapshot-too-large violation",
    escapes: true,
  },
  {
    match: /folders outside the workspace \(an \/opt/,
    injected: "decoys in /opt- and /srv-like folders, a held-back checks folder outside the repository, sockets in /run and /tmp, an abstract socket",
    times: "1 worker command + 1 check",
    held: "absent: commands and checks start from an empty root plus a read-only allow-list",
    escapes: true,
  },
  {
    match: /opencode serve itself reaches no other project/,
    injected:
      "as opencode serve itself: another project's .env in $HOME, the user's checkout, .git/config and objects, /opt- and /srv-like decoys, host sockets in $HOME and /tmp",
    times: "1 serve start",
    held: "absent or unreachable: serve starts from the allow-list; workspaces borrow the engine's object mirror",
    escapes: true,
  },
  {
    match: /a worker command reaches none of them either/,
    injected: "the same decoys from a worker command, the user's object store included",
    times: "1 worker command",
    held: "absent or unreachable; git log and git diff work from the engine's mirror",
    escapes: true,
  },
  {
    match: /cannot unmount what hides a folder/,
    injected: "root inside a worker command or a check unmounting the tmpfs over $HOME and /tmp",
    times: "2",
    held: "refused (no capability is kept); the hidden files stay hidden",
    escapes: true,
  },
  {
    match: /150 MB \/slots/,
    injected: "a model endpoint answering /slots and /metrics with 150 MB",
    times: "1 endpoint",
    held: "read to 4 MiB at most, then 'reports nothing': the engine's API is not held",
  },
  {
    match: /parsed in a worker thread/,
    injected: "a /slots answer of the read cap's size (4 MiB), parsed",
    times: "4 parses each way",
    held: "parsed in a worker thread, never on the engine's (each way's event-loop stall printed by the test)",
  },
  {
    match: /HUB_LISTING_MAX_BYTES|HUB_CONFIG_MAX_BYTES|release listing larger|more than the file's known size/,
    injected: "a Hub, release listing or download answering past its cap",
    times: "1 stub server",
    held: "a coded error; the answer is not read whole",
  },
  {
    match: /case-variant of a protected folder|Tests\/Test_x\.py/,
    injected: "a worker writing Tests/Test_x.py, TESTS/, tests./ and an NFD name with tests/** protected",
    times: "4 names",
    held: "a protected-file violation: not graded built",
    escapes: true,
  },
  {
    match: /cgroup v2 against a stand-in/,
    injected: "the cgroup v2 path on a stand-in hierarchy (no internal processes, a refused write, a kernel without cgroup.kill)",
    times: "7",
    held: "limits set before any command runs, refused (never unlimited) when a write fails, every group removed, the engine never killed",
    escapes: true,
  },
  {
    match: /nothing inside holds a capability on the host/,
    injected: "mounting a cgroup v1 hierarchy and making a disk device node from opencode serve's sandbox",
    times: "2",
    held: "refused: serve runs in its own user namespace",
    escapes: true,
  },
  {
    match: /grading writes no object and no ref into the person's \.git/,
    injected: "a built change holding a 16 MiB file, graded, then published",
    times: "1",
    held: "the person's .git unchanged by grading (objects and refs); publishing brings exactly the graded commit",
    escapes: true,
  },
];

export interface FaultRow {
  file: string;
  test: string;
  injected: string;
  times: string;
  held: string;
  status: "passed" | "failed" | "skipped";
  durationSec: number;
  recordsLost: string;
  escapes: string;
  /** First line of the failure, or the skip reason. */
  note?: string;
}

export interface FaultSuite {
  command: string;
  wallSec: number;
  passed: number;
  failed: number;
  skipped: number;
  rows: FaultRow[];
  error?: string;
}

/** Runs the suite's files with vitest's JSON reporter and summarizes them. */
export function runFaultSuite(root: string): FaultSuite {
  const out = path.join(root, "bench", "tmp", "faults.json");
  rmSync(out, { force: true });
  const args = ["vitest", "run", "--project", "integration", "--project", "unit", ...FAULT_FILES, "--reporter=json", `--outputFile=${out}`];
  const t0 = Date.now();
  // The llama-server the other parts found (the build cache, PATH): the model-server faults need it named.
  const llama = process.env.LLAMA_SERVER ? null : findLlamaServer();
  const r = spawnSync("npx", args, {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 2 ** 20,
    env: { ...process.env, ...(llama ? { LLAMA_SERVER: llama } : {}) },
  });
  const wallSec = round((Date.now() - t0) / 1000);
  const command = `npx ${args.slice(0, -2).join(" ")}`;
  if (!existsSync(out))
    return {
      command,
      wallSec,
      passed: 0,
      failed: 0,
      skipped: 0,
      rows: [],
      error: `vitest wrote no result (exit ${r.status}): ${(r.stderr || r.stdout).trim().split("\n").slice(-5).join(" ")}`,
    };
  const json = JSON.parse(readFileSync(out, "utf8")) as {
    testResults: {
      name: string;
      message?: string;
      assertionResults: { fullName: string; title: string; status: string; duration?: number; failureMessages?: string[] }[];
    }[];
  };
  const rows: FaultRow[] = [];
  // An entry that several tests match (a file of cases) says what was injected once; its other rows name their test.
  const used = new Set<Entry>();
  for (const f of json.testResults) {
    const file = path.relative(root, f.name);
    for (const t of f.assertionResults) {
      const e = CATALOG.find((c) => c.match.test(t.fullName));
      const status = t.status === "passed" ? "passed" : t.status === "failed" ? "failed" : "skipped";
      const col = (asserted: boolean | undefined) => (!asserted ? "–" : status === "passed" ? "0" : status === "failed" ? "test failed" : "not run");
      const msg = t.failureMessages?.[0] ?? "";
      const where = /test\/integration\/[\w.-]+\.test\.ts:\d+/.exec(msg)?.[0];
      const note =
        status === "failed" ? `${msg.split("\n")[0]!.slice(0, 300)}${where ? ` (${where})` : ""}` : status === "skipped" ? skipReason(file) : undefined;
      const again = !!e && used.has(e);
      if (e) used.add(e);
      rows.push({
        file,
        test: t.title,
        injected: again ? `↳ ${t.title}` : (e?.injected ?? t.title),
        times: again ? "–" : (e?.times ?? "–"),
        held: again ? "as above" : (e?.held ?? "(see the test)"),
        status,
        durationSec: round((t.duration ?? 0) / 1000),
        recordsLost: col(e?.lost),
        escapes: col(e?.escapes),
        ...(note ? { note } : {}),
      });
    }
    if (!f.assertionResults.length && f.message)
      rows.push({
        file,
        test: "(file)",
        injected: "–",
        times: "–",
        held: "–",
        status: "failed",
        durationSec: 0,
        recordsLost: "–",
        escapes: "–",
        note: f.message.split("\n")[0],
      });
  }
  const count = (s: FaultRow["status"]) => rows.filter((x) => x.status === s).length;
  return { command, wallSec, passed: count("passed"), failed: count("failed"), skipped: count("skipped"), rows };
}

/** Why a file's tests skip themselves on this machine (what their own skip conditions say). */
function skipReason(file: string): string {
  if (file.includes("model-server")) return "needs LLAMA_SERVER (scripts/build-llama-server.sh)";
  if (file.includes("disk")) return "needs a tmpfs mount for the state dir (root or CAP_SYS_ADMIN)";
  if (file.includes("containment")) return "no working bubblewrap here";
  return "skipped";
}
