/**
 * React hooks shared by the components.
 */
import { useEffect, useRef } from 'react';

/**
 * Call `tick` now and then every `intervalMs` until it returns false or the component goes away.
 * A tick that throws is reported to `onError` and polling goes on. The page being hidden pauses it.
 */
export function usePoll(
  tick: () => Promise<boolean | void>,
  intervalMs: number,
  deps: unknown[],
  onError?: (error: unknown) => void
): void {
  const tickRef = useRef(tick);
  tickRef.current = tick;
  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const run = async (): Promise<void> => {
      if (stopped) {
        return;
      }
      let again: boolean | void = true;
      if (!document.hidden) {
        try {
          again = await tickRef.current();
        } catch (error) {
          onError?.(error);
        }
      }
      if (!stopped && again !== false) {
        timer = window.setTimeout(run, intervalMs);
      }
    };
    void run();
    return () => {
      stopped = true;
      if (timer !== undefined) {
        window.clearTimeout(timer);
      }
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
}
