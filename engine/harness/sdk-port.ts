import type { OpencodeClient } from "@opencode-ai/sdk/v2";
import type { OpencodePort, PortResult, TurnMessage } from "./port";

/** What an SDK call resolves to (the SDK returns a failed call's error instead of throwing it). */
type SdkAnswer<T> = { data?: T; error?: unknown; response?: Response };

/**
 * One SDK call as a PortResult. No HTTP answer (the SDK returns the fetch error, or throws when an answer came and its
 * body could not be read) is `no-answer`; an error status is `status`; a 2xx answer is the value `pick` reads from its
 * data (an answer without it is a `status` failure with the answer's status). Without `pick` the call has no value.
 */
async function call<T, V = void>(p: () => Promise<SdkAnswer<T>>, pick?: (data: T | undefined) => V | undefined): Promise<PortResult<V>> {
  let res: SdkAnswer<T>;
  try {
    res = await p();
  } catch (error) {
    return { ok: false, kind: "no-answer", error };
  }
  if (!res.response) return { ok: false, kind: "no-answer", error: res.error };
  if (!res.response.ok) return { ok: false, kind: "status", status: res.response.status };
  if (!pick) return { ok: true, value: undefined as V };
  const value = pick(res.data);
  return value === undefined ? { ok: false, kind: "status", status: res.response.status } : { ok: true, value };
}
const same = <T>(d: T | undefined): T | undefined => d;

/** The agents a server loaded (opencode-server.ts verifies the worker agent before any session). */
export const agentsOf = (client: OpencodeClient, directory: string): Promise<PortResult<{ name: string }[]>> =>
  call(() => client.app.agents({ directory }), same);

/** The port over opencode's SDK client: with the one above, the only place the engine calls the SDK (its event stream is read by sse.ts). */
export function sdkPort(client: OpencodeClient): OpencodePort {
  return {
    createSession: ({ directory, title }) =>
      call(
        () => client.session.create({ directory, title }),
        (d) => (d?.id ? { id: d.id, projectID: d.projectID } : undefined),
      ),
    prompt: ({ sessionID, directory, agent, model, text }) =>
      call(() => client.session.promptAsync({ sessionID, directory, agent, ...(model ? { model } : {}), parts: [{ type: "text", text }] })),
    abort: ({ sessionID, directory }) => call(() => client.session.abort({ sessionID, directory })),
    sessionStatus: ({ directory }) => call(() => client.session.status({ directory }), same),
    messages: ({ sessionID, directory }) =>
      call(
        () => client.session.messages({ sessionID, directory }),
        (d) => d as TurnMessage[] | undefined,
      ),
    replyPermission: ({ requestID, directory, reply, message }, o) =>
      call(() => client.permission.reply({ requestID, directory, reply, ...(message ? { message } : {}) }, o)),
    replyQuestion: ({ requestID, directory, answers }, o) => call(() => client.question.reply({ requestID, directory, answers }, o)),
    rejectQuestion: ({ requestID, directory }, o) => call(() => client.question.reject({ requestID, directory }, o)),
    permissions: ({ directory }) => call(() => client.permission.list({ directory }), same),
    questions: ({ directory }) => call(() => client.question.list({ directory }), same),
    dispose: ({ directory }) => call(() => client.instance.dispose({ directory })),
  };
}
