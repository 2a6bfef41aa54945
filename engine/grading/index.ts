// Grading's surface: checks run held back, scope, the verdict, the ladder, grading's folders.
// Code outside engine/grading/ imports only this file (scripts/layers.mjs).
export { heldBackProblem, runChecks, shellSyntaxProblem } from "./checks";
export { discard, folderIn, sweepDiscarded } from "./folders";
export { baselineChecks, baselineInFreshWorkspace, combinedCheckConfig, grade, ungradedVerdict } from "./grade";
export { LADDER, materializeRung, summarizeLadder } from "./ladder";
export { globProblem, protectMatcher, scopeMatcher } from "./scope";
export { runnerConfigReason } from "./runner-config";
