// The diff viewer (with its syntax highlighter) is the bulk of the bundle: it loads on first use, not at first paint.
import { lazy, Suspense, type ComponentProps } from "react";

const Impl = lazy(() => import("./Diff").then((m) => ({ default: m.Diff })));

export function Diff(props: ComponentProps<typeof Impl>) {
  return (
    <Suspense fallback={<div className="muted small pad">Loading diff viewer…</div>}>
      <Impl {...props} />
    </Suspense>
  );
}
