import { accessSync, constants } from "node:fs";
import path from "node:path";
import type { PushResult } from "../../shared/api";
import type { IntegrationResult } from "../../shared/batch";
import { codeOf, InputError } from "../../shared/errors";
import { hostedRepo, redactUrlCredentials } from "../../shared/remote-url";
import { quoteUntrusted, showUntrusted } from "../../shared/untrusted";
import { outcomeWord, claimWords } from "../../shared/vocabulary";
import { type Worker, workerTitle } from "../../shared/worker";
import { type CommandResult, runCommand } from "../process";
import { runnerConfigReason } from "../grading";
import { describeFlags, flaggedChanges, git, gitComplaint, gitWithObjects, landObjects, userGitEnv } from "../workspace";
import type { Engine } from "./engine";
import { notBuilt } from "./lifecycle";
import { counted } from "../../shared/words";

/**
 * Push a built worker's graded commit (or a batch's passed integration commit) to a branch on a remote the person
 * names, and open a pull request with `gh` when it is installed and signed in. Run by the engine with the person's
 * git and gh (their credentials stay in the engine's process; no worker runs here): never forced (a plain refspec, no
 * `+`), never to the remote's default branch, with hooks off (a pre-push hook would run the project's scripts, the
 * worker's among them).
 */
export async function pushWork(
  engine: Engine,
  input: { workerId?: string; batchId?: string; remote: string; branch?: string; pr?: boolean; title?: string; acceptFlagged?: boolean },
): Promise<PushResult> {
  // A remote URL may carry credentials (https://user:token@host/…): they are never shown, in a result, an error or a log.
  try {
    const r = await pushUnredacted(engine, input);
    return { ...r, remote: redactUrlCredentials(r.remote), prProblem: r.prProblem === null ? null : redactUrlCredentials(r.prProblem) };
  } catch (err) {
    if (err instanceof Error) {
      err.message = redactUrlCredentials(err.message);
      if (err.stack) err.stack = redactUrlCredentials(err.stack);
    }
    throw err;
  }
}

async function pushUnredacted(
  engine: Engine,
  input: { workerId?: string; batchId?: string; remote: string; branch?: string; pr?: boolean; title?: string; acceptFlagged?: boolean },
): Promise<PushResult> {
  const what = input.workerId ? workerPush(engine, input.workerId) : batchPush(engine, input.batchId!);
  const { repo, commit, id, body, title } = what;
  // A pushed branch runs the remote's CI (a workflow the worker wrote, with the repository's secrets): flagged files
  // need the same explicit acceptance as a merge.
  const flags = input.workerId
    ? (engine.get(input.workerId).verdict?.flags ?? [])
    : await flaggedChanges(repo, what.base, commit, await engine.batches.graded(repo), undefined, [], runnerConfigReason);
  if (flags.length && !input.acceptFlagged)
    throw new InputError(
      `${id}'s change holds flagged files that do more than their diff shows: ${describeFlags(flags)}. Review them, then push with --accept-flagged (nothing was pushed)`,
      "conflict",
    );
  const remote = input.remote.trim();
  if (!remote || remote.startsWith("-") || /[\s\0]/.test(remote))
    throw new InputError(`"${input.remote}" is not a remote: name one of \`git remote\`, or give its URL`);
  const remotes = (await git(repo, ["remote"], { allowFail: true })).split("\n").filter(Boolean);
  if (!remotes.includes(remote) && !/[:/]/.test(remote))
    throw new InputError(`${repo} has no remote "${remote}"${remotes.length ? ` (it has: ${remotes.join(", ")})` : ""}: name one, or give a URL`);
  const branch = (input.branch ?? `ocw/${id}`).replace(/^refs\/heads\//, "");
  const valid = await runCommand("git", ["check-ref-format", "--branch", branch], { cwd: repo, env: userGitEnv() });
  if (valid.exitCode !== 0 || branch.startsWith("-")) throw new InputError(`"${branch}" is not a valid branch name`);
  const head = await runCommand("git", ["ls-remote", "--symref", remote, "HEAD"], { cwd: repo, env: userGitEnv() });
  if (head.exitCode !== 0) throw new InputError(`cannot reach the remote ${remote}: ${gitComplaint(head)}`, "unavailable");
  const def = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(head.stdout)?.[1] ?? null;
  if (branch === def || (!def && ["main", "master", "trunk"].includes(branch))) {
    throw new InputError(
      `${branch} is ${remote}'s default branch: the engine never pushes there. Push to a branch of its own (--branch), then merge through a pull request`,
      "conflict",
    );
  }
  // The person lands the work: exactly the commit's objects their repository lacks come from the engine's graded store
  // (grading put nothing there), and a worker's branch ocw/<id> is published as by `ocw publish` (one the person moved
  // elsewhere is left as it is: the push names the graded commit itself).
  const graded = await engine.batches.graded(repo);
  await landObjects(repo, graded, commit);
  if (input.workerId && !engine.get(input.workerId).merged)
    await engine.publish(input.workerId).catch((err: unknown) => {
      if (codeOf(err) !== "conflict") throw err;
    });
  // The branch there already: at this worker's earlier round's graded commit (pushed before a review), or at this
  // batch's earlier integration commit (its integration ran again since), it follows the latest verdict, with a lease on
  // exactly that commit (anything else there is refused below, never overwritten).
  const earlier = input.workerId ? earlierRounds(engine.get(input.workerId), commit) : [];
  let replaced: string | null = null;
  if (earlier.length || input.batchId) {
    const there = await runCommand("git", ["ls-remote", remote, `refs/heads/${branch}`], { cwd: repo, env: userGitEnv() });
    const tip = there.exitCode === 0 ? (/^([0-9a-f]{40,64})\trefs\/heads\//m.exec(there.stdout)?.[1] ?? null) : null;
    if (tip && tip !== commit && (earlier.includes(tip) || (input.batchId && (await earlierIntegration(repo, graded, tip, input.batchId, what.base)))))
      replaced = tip;
  }
  const lease = replaced ? [`--force-with-lease=refs/heads/${branch}:${replaced}`] : [];
  const push = await runCommand(
    "git",
    ["-c", "core.hooksPath=/dev/null", "push", "--porcelain", "--no-verify", ...lease, remote, `${commit}:refs/heads/${branch}`],
    { cwd: repo, env: userGitEnv() },
  );
  if (push.exitCode !== 0) throw pushRefusal(push, remote, branch, input.workerId ? "the worker's graded commit" : "the batch's integration commit");
  let pr: PushResult["pr"] = null;
  let prProblem: string | null = null;
  if (input.pr) {
    const gh = findOnPath("gh");
    // The remote's URL as configured (`remote.NAME.url`, before any insteadOf), or the URL given.
    const url = remotes.includes(remote) ? await git(repo, ["config", "--get", `remote.${remote}.url`], { allowFail: true }) : remote;
    const ghRepo = hostedRepo(url);
    const again = `the branch is pushed: open the pull request on the remote's site, or run this push again with --pr`;
    if (!ghRepo) prProblem = `${remote} (${url}) is not a repository on a hosting service that gh can name: open the pull request there (the branch is pushed)`;
    else if (!gh) prProblem = "gh is not installed: open the pull request on the remote's site (the branch is pushed)";
    else {
      // Signed in to the remote's host (another host's state, e.g. an expired token elsewhere, is not this push's concern).
      const host = ghRepo.split("/")[0]!;
      const auth = await runCommand(gh, ["auth", "status", "--hostname", host], { cwd: repo, env: { ...process.env } });
      if (auth.exitCode !== 0)
        prProblem = `gh is not signed in to ${host} (run \`gh auth login --hostname ${host}\`): open the pull request on the remote's site, or run this push again with --pr (the branch is pushed)`;
      else {
        const args = ["pr", "create", "--head", branch, "--title", input.title ?? title, "--body", body];
        if (def) args.push("--base", def);
        // The repository named by the remote, never gh's own default (which may be another repository of the person's).
        args.push("--repo", ghRepo);
        const r = await runCommand(gh, args, { cwd: repo, env: { ...process.env } });
        const said = (r.stderr || r.stdout).trim();
        if (r.exitCode === 0) pr = { url: r.stdout.trim().split("\n").filter(Boolean).at(-1) ?? "" };
        else if (/already exists/i.test(said)) {
          // Pushed again (a later round, or the same commit twice): the pull request of this branch is open already.
          // gh names it on its last line; GitHub's own 422 ("A pull request already exists for owner:branch") does not.
          const named = /(https?:\/\/\S+\/pull\/\d+)\s*$/.exec(said)?.[1];
          const listed = named
            ? null
            : await runCommand(gh, ["pr", "list", "--repo", ghRepo, "--head", branch, "--state", "open", "--json", "url", "--jq", ".[0].url"], {
                cwd: repo,
                env: { ...process.env },
              });
          const found = named ?? (listed?.exitCode === 0 ? listed.stdout.trim().split("\n")[0] : "");
          if (found) {
            pr = { url: found, existing: true };
            // Its description is the verdict card of the push that opened it: the latest verdict replaces it.
            if (replaced) {
              const edit = await runCommand(gh, ["pr", "edit", found, "--repo", ghRepo, "--body", body], { cwd: repo, env: { ...process.env } });
              if (edit.exitCode !== 0)
                prProblem = `the pull request ${found} is open already, and gh could not update its description to the latest verdict: ${ghSaid(edit)}`;
            }
          } else prProblem = `a pull request of ${branch} is open already, but gh could not name it: ${lastLines(said)}; ${again}`;
        } else prProblem = `gh could not open the pull request: ${lastLines(said)}${ghHint(said)}; ${again}`;
      }
    }
  }
  return { remote, branch, commit, pr, prProblem, replaced };
}

const lastLines = (s: string) => s.split("\n").slice(-2).join(" ");
const ghSaid = (r: { stdout: string; stderr: string }) => lastLines((r.stderr || r.stdout).trim());

/** What to do about gh's refusals that are not the pull request's own: a refused sign-in, GitHub's rate limit. */
function ghHint(said: string): string {
  if (/\b401\b|bad credentials|authentication/i.test(said)) return " (GitHub refused gh's sign-in: run `gh auth login` again)";
  if (/rate limit/i.test(said)) return " (GitHub's rate limit: wait for it to reset)";
  return "";
}

/**
 * Whether `tip` is an earlier integration commit of this batch (the engine's own, pushed before the integration ran
 * again): a commit on the batch's base whose message is the engine's for this batch. Read from the graded store or the
 * person's repository (a push copied it there); unknown there, it is not.
 */
async function earlierIntegration(repo: string, graded: string, tip: string, batchId: string, base: string): Promise<boolean> {
  const body = await gitWithObjects(repo, graded, ["cat-file", "commit", tip]);
  if (!body) return false;
  const head = body.slice(0, body.indexOf("\n\n"));
  const parents = [...head.matchAll(/^parent (\S+)$/gm)].map((m) => m[1]);
  const subject = body.slice(body.indexOf("\n\n") + 2).split("\n")[0] ?? "";
  return parents.length === 1 && parents[0] === base && subject.startsWith(`ocw: integration of batch ${batchId} (`);
}

/** The worker's earlier rounds' graded commits (a branch pushed at one of them follows the latest verdict). */
function earlierRounds(w: Worker, commit: string): string[] {
  return (w.rounds ?? []).flatMap((r) => (r.commit && r.commit !== commit ? [r.commit] : []));
}

/**
 * Why git push failed, in words, from its porcelain lines (`!\tSRC:DST\t[rejected] (non-fast-forward)`, `[remote
 * rejected] (pre-receive hook declined)`) and the remote's own words (its `remote:` lines: a hook's message).
 */
function pushRefusal(push: CommandResult, remote: string, branch: string, what: string): InputError {
  const status = /^!\t\S+\t(\[[^\]]+\])\s*(?:\((.*)\))?$/m.exec(push.stdout);
  const kept = `nothing was pushed, ${what} is unchanged`;
  if (status?.[1] === "[rejected]" || (!status && /non-fast-forward|fetch first/.test(push.stdout + push.stderr)))
    return new InputError(
      `${remote} already has a branch ${branch} with other commits: the engine never forces a push; name another --branch (${kept})`,
      "conflict",
    );
  if (status?.[1] === "[remote rejected]") {
    const said = push.stderr
      .split("\n")
      .filter((l) => l.startsWith("remote:"))
      .map((l) => l.slice("remote:".length).trim())
      .filter(Boolean)
      .slice(-6)
      .join(" / ")
      .slice(0, 600);
    // What a remote says may name the worker's files (GitHub names a file over its size limit): quoted and labelled.
    return new InputError(
      `${remote} refused the push (${status[2] || "remote rejected"})${said ? `, saying ${quoteUntrusted(said, "the remote's words, which may name the worker's files", 600)}` : ""}; ${kept}: do what it asks (or ask who runs it), then push again, or push to another --remote or --branch`,
      "conflict",
    );
  }
  return new InputError(`the push to ${remote} failed: ${gitComplaint(push)} (${kept}): fix that, then push again`, "unavailable");
}

function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const f = path.join(dir, name);
    try {
      accessSync(f, constants.X_OK);
      return f;
    } catch {
      /* next */
    }
  }
  return null;
}

function workerPush(engine: Engine, workerId: string) {
  const w = engine.get(workerId);
  if (w.state !== "built") throw notBuilt(w, "pushed");
  if (!w.verdict?.commit) throw new InputError(`worker ${workerId} has no graded commit to push`, "conflict");
  if (w.discarded) throw new InputError(`worker ${workerId} was discarded: nothing is left to push`, "conflict");
  const title = workerTitle(w.spec, 72);
  return { repo: w.repo, commit: w.verdict.commit, base: w.baseCommit ?? w.verdict.commit, id: workerId, title, body: verdictCard(w) };
}

function batchPush(engine: Engine, batchId: string) {
  const s = engine.batch(batchId);
  const rec = engine.batches.get(batchId);
  const res = s.integration?.result;
  if (!rec || !res) throw new InputError(`batch ${batchId} has no integration checks: push its workers one by one (ocw push WORKER_ID)`, "conflict");
  if (!res.passed || !res.commit) throw new InputError(`batch ${batchId}'s integration did not pass (${res.reason ?? "failed"}): nothing to push`, "conflict");
  const stale = engine.batches.integrationStale(batchId);
  if (stale)
    throw new InputError(
      `batch ${batchId}'s integration is of its workers as they were: ${stale}. It runs again once every task is at rest; push once it passed (nothing was pushed)`,
      "conflict",
    );
  const workers = res.workers.map((id) => engine.get(id));
  return {
    repo: rec.repo!,
    commit: res.commit,
    base: res.base,
    id: batchId,
    title: `Batch ${batchId}: ${counted(workers.length, "task")}`,
    body: batchCard(batchId, res, workers),
  };
}

/** Markdown-safe one line of text (a title a person wrote). */
const md = (s: string) => s.replace(/[\r\n]+/g, " ").replace(/([\\`*_{}[\]<>|#])/g, "\\$1");
/**
 * A file name or a violation the worker chose, on one line: made visible (shared/untrusted.ts), bounded, and shown as a
 * code span, fenced with more backticks than any run in it: GitHub links nothing inside code (an `@name` would ping that
 * user, `#123` or `owner/repo#1` link an issue, a URL or a commit id a link), and markdown there is literal. In a table
 * cell (`cell`), `|` is escaped, as GitHub's tables read it even inside code.
 */
function mdUntrusted(s: string, max = 300, cell = false): string {
  let text = showUntrusted(s, { lines: false, max });
  if (cell) text = text.replace(/\|/g, "\\|");
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const fence = "`".repeat(longest + 1);
  // A span that begins or ends with a backtick or a space is padded with one space each side (CommonMark strips it).
  const pad = /^[` ]|[` ]$/.test(text) || !text ? " " : "";
  return `${fence}${pad}${text}${pad}${fence}`;
}

/** The verdict card as a pull request body: checks and their result, claim, honesty, diffstat, flagged files. */
export function verdictCard(w: Worker): string {
  const v = w.verdict!;
  const lines = [
    `**${md(workerTitle(w.spec))}**`,
    "",
    `Verdict: **${outcomeWord(v.verdict)}** (held-back checks the worker never saw) · ${claimWords(v)}`,
    `Graded commit: \`${v.commit}\` · worker \`${w.id}\``,
    "",
    "| check | result |",
    "|---|---|",
    ...v.checks.map(
      (c) => `| ${md(c.name)} | ${c.passed ? "passed" : "failed"}${c.exitCode !== undefined && c.exitCode !== null ? ` (exit ${c.exitCode})` : ""} |`,
    ),
    `| scope | ${
      v.scope.passed
        ? "passed"
        : `failed (naming the worker's files): ${v.scope.violations
            .slice(0, 20)
            .map((x) => mdUntrusted(x, 300, true))
            .join(", ")}`
    } |`,
  ];
  // Followed up (a review, a continue, a fix round): the rounds and each one's verdict; this card is the latest's.
  const graded = (w.rounds ?? []).filter((r) => r.verdict);
  if (graded.length > 1)
    lines.push(
      "",
      `Rounds: ${graded.length} (${graded.map((r) => `${r.round} ${r.kind}: ${outcomeWord(r.verdict!)}`).join(" · ")}); this is round ${graded.at(-1)!.round}'s graded commit`,
    );
  // A flagged file's name and a symlink's target (in the detail) are the worker's: made visible and markdown-safe.
  if (v.flags?.length)
    lines.push(
      "",
      "Flagged files (accepted before landing; the names are the worker's):",
      ...v.flags.map((f) => `- ${mdUntrusted(f.path)}: ${mdUntrusted(f.detail)}`),
    );
  if (v.diffStat) lines.push("", "```", v.diffStat.replace(/```/g, "ʼʼʼ"), "```");
  lines.push("", "_Opened by opencode-worker. The worker's own words are not part of this card._");
  return lines.join("\n");
}

function batchCard(batchId: string, res: IntegrationResult, workers: Worker[]): string {
  const lines = [
    `**Batch ${batchId}**: integration commit \`${res.commit}\` on \`${res.base.slice(0, 12)}\``,
    "",
    `Integration: **${res.passed ? "passed" : "failed"}**`,
    "",
    "| integration check | result |",
    "|---|---|",
    ...res.checks.map(
      (c) => `| ${md(c.name)} | ${c.passed ? "passed" : "failed"}${c.exitCode !== undefined && c.exitCode !== null ? ` (exit ${c.exitCode})` : ""} |`,
    ),
    "",
    ...workers.flatMap((w) => ["---", "", verdictCard(w), ""]),
  ];
  return lines.join("\n");
}
