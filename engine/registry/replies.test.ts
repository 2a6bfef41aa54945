import { describe, expect, it } from "vitest";
import { ReplyTrack, type StreamMessage, type StreamPart } from "./replies";

const user = (id: string): StreamMessage => ({ id, role: "user" });
const reply = (id: string, parentID: string, more: { completed?: number; error?: { name: string } } = {}): StreamMessage => ({
  id,
  role: "assistant",
  parentID,
  time: { created: 1, ...(more.completed ? { completed: more.completed } : {}) },
  ...(more.error ? { error: more.error } : {}),
});
const text = (id: string, messageID: string, t: string, end = true): StreamPart => ({
  id,
  messageID,
  type: "text",
  text: t,
  time: { start: 1, ...(end ? { end: 2 } : {}) },
});

/** A track that saw one prompt answered by a tool-call step and a final text step. */
function answered(): ReplyTrack {
  const t = new ReplyTrack();
  t.message(user("u1"));
  t.message(reply("a1", "u1"));
  t.message(reply("a1", "u1", { completed: 5 }));
  t.message(reply("a2", "u1"));
  t.part(text("p1", "a2", "done"));
  t.part(text("p2", "a2", "OUTCOME: built"));
  t.message(reply("a2", "u1", { completed: 9 }));
  return t;
}

describe("the turn the event stream saw", () => {
  it("one prompt, its replies all finished: the replies with their finished text, in order", () => {
    expect(answered().settled()).toEqual({
      replies: [
        { info: { role: "assistant", time: { completed: 5 } }, parts: [] },
        {
          info: { role: "assistant", time: { completed: 9 } },
          parts: [
            { type: "text", text: "done" },
            { type: "text", text: "OUTCOME: built" },
          ],
        },
      ],
    });
  });

  it("a failed last reply is a finished turn that carries the error", () => {
    const t = new ReplyTrack();
    t.message(user("u1"));
    t.message(reply("a1", "u1", { error: { name: "APIError" } }));
    expect(t.settled()?.replies.at(-1)?.info.error).toEqual({ name: "APIError" });
  });

  it("says nothing (the settler asks opencode) whenever the stream alone is ambiguous", () => {
    const steered = answered();
    steered.promptSent();
    expect(steered.settled(), "a steer went out during the turn").toBeNull();

    const open = answered();
    open.message(reply("a3", "u1"));
    expect(open.settled(), "the last reply has not finished").toBeNull();

    const compacted = answered();
    compacted.message(user("u2"));
    expect(compacted.settled(), "a second user message (a compaction's)").toBeNull();

    const late = new ReplyTrack();
    late.message(reply("old", "u0", { error: { name: "MessageAbortedError" } }));
    late.message(user("u1"));
    late.message(reply("a1", "u1", { completed: 3 }));
    expect(late.settled(), "a late reply of an earlier, aborted turn").toBeNull();

    const noUser = new ReplyTrack();
    noUser.message(reply("a1", "u1", { completed: 3 }));
    expect(noUser.settled(), "the prompt's own user message never seen").toBeNull();

    const silent = new ReplyTrack();
    silent.message(user("u1"));
    expect(silent.settled(), "no reply yet").toBeNull();
  });

  it("text still streaming and other parts are not the claim", () => {
    const t = new ReplyTrack();
    t.message(user("u1"));
    t.part(text("p1", "a1", "half", false));
    t.part({ id: "p2", messageID: "a1", type: "reasoning", text: "thinking", time: { start: 1, end: 2 } });
    t.message(reply("a1", "u1", { completed: 4 }));
    expect(t.settled()?.replies[0]?.parts).toEqual([]);
  });
});
