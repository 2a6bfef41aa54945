/** Server instructions: Claude Code puts them in the system prompt and cuts them at 2 KB — keep under that. */
export const INSTRUCTIONS = `opencode-worker runs coding tasks on OpenCode workers (a local or API model) in their own git worktree and grades each with held-back checks the worker never sees.

Loop: setup_status (a target must be ready; slots.free = how many run at once) → delegate {task, directory (absolute), checks, scope, protect} or delegate_batch (independent tasks with DISJOINT scopes, no more than the free slots) → wait {workerId|workerIds|batchId|} repeatedly → result → diff → merge.

Write tasks self-contained: goal, exact files, interfaces/signatures, constraints, what done means. Always give checks (commands that exit 0 only when the work is right, e.g. the tests); without checks the verdict proves little. Protect the tests you check with.

Approvals: workers ask before editing files or running commands. wait returns early with pending:[{askId, tool, what}]; read the ask (pending_approvals shows diffs) and answer with approve {askId, decision: once|always|reject, message?}. always grants only the exact commands in the ask's always list. Reject with a reason rather than approving something outside the task. An ask answered in the GUI or elsewhere resolves here too. Never leave asks unanswered: the worker is blocked.

steer {workerId, text} corrects a running worker; stop ends one; resume {workerId, message} continues a stopped/interrupted one.

Never trust the worker's own claim: the verdict (built | honest-failure) comes from the checks and scope; honest says whether the claim matched. Report built-rate and honest-rate for batches. A built worker's work is on its branch: review it with diff, then merge (the engine merges the graded commit; it refuses on conflict and says what to do); discard removes failed attempts. For a failure, read the failing check output in result and re-delegate a targeted fix (or resume with a message). Workers survive restarts: workers {directory} finds earlier ones.`;
