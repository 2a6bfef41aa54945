/** Server instructions: Claude Code puts them in the system prompt and cuts them at 2 KB — keep under that. */
export const INSTRUCTIONS = `opencode-worker runs coding tasks on OpenCode workers (a local or API model) in their own git worktree and grades each with held-back checks the worker never sees.

Loop: setup_status (a target must be ready; slots.free = how many run at once) → delegate {task, directory (absolute), checks, scope, protect} or delegate_batch (independent tasks with DISJOINT scopes, no more than the free slots) → wait {workerId|workerIds|batchId|} repeatedly → result → diff → merge.

Write tasks self-contained: goal, exact files, interfaces, constraints, what done means. Always give checks that fail before the work and pass after it (e.g. the tests); a check that already passes proves nothing. Protect the tests you check with.

Approvals: workers ask before editing files or running commands. wait returns early with pending:[{askId, tool, what}]; read it (pending_approvals shows diffs) and answer with approve {askId, decision: once|always|reject, message?}; reject, with a reason, what is outside the task. An ask answered in the GUI or elsewhere resolves here too. Never leave asks unanswered: the worker is blocked.

steer {workerId, text} corrects a running worker; stop ends one; resume {workerId, message?} continues a stopped/interrupted/errored one. A graded worker takes continue {workerId, message} or review {workerId, comments:[{file, line?, body}]}: a new round in its session, graded again; retry {workerId} starts over.

Never trust the worker's claim: the verdict comes from the checks and scope (a no-op is never built; weakEvidence: its checks passed before any change); honest says whether the claim matched. Report built-rate and honest-rate for batches. A built worker's work is on its branch: review it with diff, then merge (the graded commit; refused on conflict, with what to do); discard removes failed attempts. For a failure, read the failing checks in result, then continue with what to fix. Workers survive restarts: workers {directory} finds earlier ones.`;
