// The workspace's surface: private repositories and worktrees, the engine's commit of a worker's files, fresh checkouts,
// landing and publishing, git itself. Code outside engine/workspace/ imports only this file (scripts/layers.mjs).
export { foldPath } from "./fold";
export { hashRegular, readRegular } from "./regular-file";
export { git, gitComplaint, gitScript, userGitEnv } from "./git";
export { type LinkFn, type MirrorRefresh, mirrorObjects, refreshMirror } from "./mirror";
export { combineCommits, describeFlags, flaggedChanges, gitWithObjects, isAncestor, landCommit, mergeTrees, revertCommit, treeChanges } from "./land";
export {
  changedBetween,
  checkOutBase,
  checkOutCommit,
  commitAndCheckOut,
  createWorkspace,
  fullDiff,
  dropGradedStore,
  gradedObjectsDir,
  gradedStore,
  gradedStoreOf,
  inspectRepo,
  keepGraded,
  landObjects,
  mergeHint,
  mirrorsRootOf,
  moveOntoMirror,
  partialHolds,
  prepareGrading,
  publishBranch,
  type PublishedBranch,
  removeWorkspace,
  type RepoInfo,
  SnapshotTooLarge,
  type Workspace,
  workspaceMirror,
  worktreePath,
} from "./workspace";
