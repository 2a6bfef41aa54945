// Permission ask → visible to an API subscriber, against a baseline client polling every second.
import type { EngineEvent } from "../shared/events";
import { connect, type EngineClient } from "../engine/api/client";
import { hostEngine } from "../engine/api/host";
import { createOpencodeClient } from "@opencode-ai/sdk/v2";
import type { ScriptedModel } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, tempDir } from "../test/helpers";
import { median, pct, round, sleep } from "./stats";

export interface Latency {
  p50: number;
  p99: number;
  n: number;
}

export interface GateRig {
  client: EngineClient;
  emitted: Map<string, number>;
  /** How often the rig's own stream from opencode had to be reopened. */
  reconnects(): number;
  close(): Promise<void>;
}

/** An engine hosted in this process, so the bench can also listen to its opencode server directly. */
export async function gateRig(model: ScriptedModel): Promise<GateRig> {
  const stateDir = tempDir("bench-gate");
  const hosted = await hostEngine({ stateDir });
  const client = connect({ port: hosted.port, token: hosted.token }, "gui:bench");
  await client.targets.save.mutate({ target: scriptedTarget(model.url, 32, "gate"), activate: true });
  // Warm up: start opencode serve and bootstrap once, then open our own stream to it.
  const warm = makeRepo();
  const { workerId } = await client.workers.start.mutate({ task: "BENCH-GATE warm-up", directory: warm });
  await settle(client, [workerId], () => "once", 120_000);
  const server = hosted.engine.serverFor("gate")!;
  const emitted = new Map<string, number>();
  const abort = new AbortController();
  // Reopened if opencode ends it, as the engine does with its own; an ask emitted meanwhile has no start time and is
  // left out (its n shows it).
  let reconnects = 0;
  void (async () => {
    while (!abort.signal.aborted) {
      try {
        const oc = createOpencodeClient({ baseUrl: server.url!, headers: { Authorization: server.authHeader } });
        const { stream } = await oc.global.event({ signal: abort.signal, sseMaxRetryAttempts: 1 });
        for await (const env of stream) if (env?.payload?.type === "permission.asked") emitted.set(env.payload.properties.id, Date.now());
      } catch {
        // reopened below
      }
      if (!abort.signal.aborted) reconnects++, await sleep(50);
    }
  })();
  return {
    client,
    emitted,
    reconnects: () => reconnects,
    close: async () => {
      abort.abort();
      await hosted.close();
      cleanup(stateDir, warm);
    },
  };
}

/**
 * The clock starts when opencode emits `permission.asked` (seen on the rig's own connection to its event stream) and
 * stops when a subscriber of the engine's API holds `ask.opened`. Baseline on the same asks: a client polling the
 * approvals list every second (the seed's approach).
 */
export async function gateLatency(gate: GateRig, n: number, rounds: number): Promise<{ event: Latency; poll: Latency }> {
  const event: number[] = [];
  const poll: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const dir = makeRepo();
    const seenEvent = new Map<string, number>();
    const seenPoll = new Map<string, number>();
    const cursor = (await gate.client.health.query()).cursor;
    const sub = gate.client.events.subscribe(
      { lastEventId: cursor },
      {
        onData: ({ data }) => {
          const e = data as EngineEvent;
          if (e.type === "ask.opened") seenEvent.set(e.ask.id, Date.now());
        },
      },
    );
    let polling = true;
    const poller = (async () => {
      while (polling) {
        for (const a of await gate.client.approvals.list.query()) {
          if (!seenPoll.has(a.id)) seenPoll.set(a.id, Date.now());
          // Answer only once both observers have seen the ask, so neither measurement is cut short.
          else if (seenEvent.has(a.id)) void gate.client.approvals.decide.mutate({ askId: a.id, decision: "once" }).catch(() => undefined);
        }
        await sleep(1000);
      }
    })();
    const { workerIds } = await gate.client.workers.startBatch.mutate({
      tasks: Array.from({ length: n }, (_, i) => ({ task: `BENCH-GATE ${r}-${i}`, directory: dir })),
    });
    await settle(gate.client, workerIds, undefined, 300_000);
    polling = false;
    await poller;
    sub.unsubscribe();
    for (const [id, t] of seenEvent) {
      const t0 = gate.emitted.get(id);
      if (t0 === undefined) continue;
      event.push(t - t0);
      if (seenPoll.has(id)) poll.push(seenPoll.get(id)! - t0);
    }
    cleanup(dir);
  }
  const sum = (xs: number[]): Latency => ({ p50: round(median(xs)), p99: round(pct(xs, 99)), n: xs.length });
  return { event: sum(event), poll: sum(poll) };
}
