// The engine's own words with their code spans shown as <code> (renderer/src/engineText.ts): notices, field errors,
// Setup's notes. Never for text a worker or a model wrote.
import { Fragment } from "react";
import { codeSpans } from "../engineText";

/** An engine message: plain text, its `code spans` as <code>. React text only: no markup is made from the message. */
export function EngineText({ text }: { text: string }) {
  return <>{codeSpans(text).map((s, i) => (s.code ? <code key={i}>{s.text}</code> : <Fragment key={i}>{s.text}</Fragment>))}</>;
}
