import { useCallback, useEffect, useState } from 'react';

export type Load<T> = { state: 'loading' } | { state: 'error'; error: unknown } | { state: 'ready'; value: T };

/** Runs `load` when its dependencies change; `reload` runs it again (keeping the shown value meanwhile). */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): [Load<T>, () => void] {
  const [result, setResult] = useState<Load<T>>({ state: 'loading' });
  const [round, setRound] = useState(0);
  const run = useCallback(load, deps);
  useEffect(() => {
    let live = true;
    run().then(
      (value) => live && setResult({ state: 'ready', value }),
      (error: unknown) => live && setResult({ state: 'error', error }),
    );
    return () => {
      live = false;
    };
  }, [run, round]);
  return [result, () => setRound((n) => n + 1)];
}
