// A read the GUI repeats (on events, on a timer) whose answers can come back in any order.

/**
 * Each answer (or failure) is applied only when no later read's came first: an older answer that comes back late never
 * replaces a newer one. Without it the picture stays stale until the next read, and at the end of a worker, a batch or
 * a job no read comes (a CI run under load saw a finished build shown "building" for good).
 */
export function inOrder(): <T>(read: Promise<T>, apply: (value: T) => void, fail?: (err: unknown) => void) => Promise<void> {
  let sent = 0;
  let shown = 0;
  return (read, apply, fail) => {
    const n = ++sent;
    const take = (then: () => void) => {
      if (n < shown) return;
      shown = n;
      then();
    };
    return read.then(
      (value) => take(() => apply(value)),
      (err) => take(() => fail?.(err)),
    );
  };
}
