/**
 * A worker on an API target that the provider rate-limits mid-task (a real engine, real opencode, the scripted model
 * answering 429 as OpenAI and Groq do: error.code rate_limit_exceeded, Retry-After, x-ratelimit-*):
 *  - a short Retry-After: opencode retries, then gives up; the worker ends in error with the reason in words and what
 *    to do (it said "APIError: Rate limit reached…", opencode's class name and nothing to do);
 *  - a long Retry-After (a daily quota: an hour): opencode would wait that long before each of its 5 tries, the worker
 *    "running" with nothing happening and its slot held. It is interrupted at once, saying until when, and resumes in
 *    its session once the provider answers again.
 */
import { describe, expect, it } from "vitest";
import { scriptedEngineRig } from "./scripted-engine";
import { untilState } from "../helpers";

const rig = scriptedEngineRig("ratelimit", 2);
const atRest = (s: string) => !["queued", "starting", "running"].includes(s);

describe("a provider's 429 in the middle of a task", () => {
  it("a short Retry-After that outlasts opencode's retries: error, said in words, never 'built'", async () => {
    rig.model.addScript(
      /RL-SHORT/,
      () => ({
        error: {
          status: 429,
          message: "Rate limit reached for requests per min (RPM)",
          headers: { "retry-after": "1", "x-ratelimit-remaining-requests": "0" },
        },
      }),
      "rl-short",
    );
    const { workerId } = await rig.engine.client.workers.start.mutate({ task: "RL-SHORT do it", directory: rig.repo(), checks: [] });
    const w = await untilState(rig.engine.client, workerId, (x) => atRest(x.state), 120_000);
    expect(w.state).toBe("error");
    expect(w.stateReason).toMatch(
      /the model provider rate-limited the worker's model calls \(HTTP 429; the error's words, untrusted: "Rate limit reached for requests per min \(RPM\)"; Retry-After 1 s\)/,
    );
    expect(w.stateReason).toMatch(/resume the worker once the limit resets/);
    expect(w.stateReason).not.toMatch(/APIError/);
  }, 150_000);

  it("a long Retry-After (a daily quota): interrupted at once with until when, then resumed in its session", async () => {
    let limited = true;
    rig.model.addScript(
      /RL-LONG/,
      (c) =>
        limited
          ? { error: { status: 429, message: "Rate limit reached for tokens per day (TPD)", headers: { "retry-after": "3600" } } }
          : c.turnStep === 0
            ? { text: "Nothing to change.\nOUTCOME: honest-failure" }
            : { text: "OUTCOME: honest-failure" },
      "rl-long",
    );
    const t0 = Date.now();
    const { workerId } = await rig.engine.client.workers.start.mutate({ task: "RL-LONG do it", directory: rig.repo(), checks: [] });
    const w = await untilState(rig.engine.client, workerId, (x) => atRest(x.state), 60_000);
    expect(w.state).toBe("interrupted");
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(w.stateReason).toMatch(
      /the model API asks to wait 60 min before the next try \(until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ; opencode: .*Rate limit reached for tokens per day/,
    );
    expect(w.stateReason).toMatch(/resume the worker after that/);
    const asked = rig.model.requests.filter((r) => r.kind === "chat" && JSON.stringify(r.body).includes("RL-LONG")).length;
    expect(asked).toBe(1);
    limited = false;
    await rig.engine.client.workers.resume.mutate({ workerId });
    const done = await untilState(rig.engine.client, workerId, (x) => ["built", "honest-failure", "error"].includes(x.state), 60_000);
    expect(done.state).toBe("honest-failure");
    expect(done.sessionId).toBe(w.sessionId);
  }, 150_000);

  it("the wait is the target's: its queued workers stay queued (no request each), and a resume tries again now", async () => {
    let limited = true;
    rig.model.addScript(
      /RL-QUOTA/,
      () =>
        limited
          ? { error: { status: 429, message: "Rate limit reached for tokens per day (TPD)", headers: { "retry-after": "3600" } } }
          : { text: "OUTCOME: honest-failure" },
      "rl-quota",
    );
    const asked = () => rig.model.requests.filter((r) => r.kind === "chat" && JSON.stringify(r.body).includes("RL-QUOTA")).length;
    const ids: string[] = [];
    for (const n of [1, 2, 3, 4])
      ids.push((await rig.engine.client.workers.start.mutate({ task: `RL-QUOTA ${n}`, directory: rig.repo(), checks: [] })).workerId);
    // 2 slots: the first two ask, are told to wait an hour and are interrupted; the other two stay queued
    const first = await Promise.all(ids.slice(0, 2).map((id) => untilState(rig.engine.client, id, (x) => x.state === "interrupted", 60_000)));
    expect(first.map((w) => w.state)).toEqual(["interrupted", "interrupted"]);
    await new Promise((r) => setTimeout(r, 6000));
    const rest = await Promise.all(ids.slice(2).map((workerId) => rig.engine.client.workers.get.query({ workerId })));
    // before: each queued worker started in turn, asked once and was interrupted too
    expect(rest.map((w) => w.state)).toEqual(["queued", "queued"]);
    expect(asked()).toBe(2);
    // the dashboard's serving panel says why they wait, and until when
    const held = (await rig.engine.client.status.query()).slots.find((x) => x.targetId === "ratelimit")!;
    expect(held.heldUntil! - Date.now()).toBeGreaterThan(3_500_000);
    limited = false;
    await rig.engine.client.workers.resume.mutate({ workerId: ids[0]! });
    expect((await rig.engine.client.status.query()).slots.find((x) => x.targetId === "ratelimit")!.heldUntil).toBeNull();
    const done = await Promise.all(
      [ids[0]!, ...ids.slice(2)].map((id) => untilState(rig.engine.client, id, (x) => ["built", "honest-failure", "error"].includes(x.state), 90_000)),
    );
    expect(done.map((w) => w.state)).toEqual(["honest-failure", "honest-failure", "honest-failure"]);
  }, 180_000);
});
