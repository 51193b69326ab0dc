// The live event stream of one execution, over EventSource with the session cookie. The browser
// resumes a dropped stream by itself, sending the last id as Last-Event-ID; when it gives up (an
// answer other than 200, e.g. while the server restarts) a new stream resumes from the last
// position taken with `?lastEventId=`. Either way EventLog drops whatever comes twice.
import { useEffect, useRef, useState } from 'react';
import { get } from './api';
import { EventLog, EXECUTION_EVENT_TYPES, type TimelineEvent } from './event-log';

export interface LiveState {
  events: readonly TimelineEvent[];
  connected: boolean;
  /** Times a stream (re)opened: 1 on a first connection. */
  opens: number;
}

const RECONNECT_MS = 1000;

export function useExecutionEvents(executionId: string): LiveState {
  const log = useRef(new EventLog());
  const [, setVersion] = useState(0);
  const [connected, setConnected] = useState(false);
  const [opens, setOpens] = useState(0);

  useEffect(() => {
    log.current = new EventLog();
    setVersion((v) => v + 1);
    let source: EventSource | null = null;
    let timer: number | undefined;
    let stopped = false;

    const connect = () => {
      if (stopped) return;
      const after = log.current.lastPosition;
      const url = `/v1/executions/${encodeURIComponent(executionId)}/events${after === null ? '' : `?lastEventId=${encodeURIComponent(after)}`}`;
      const es = new EventSource(url);
      source = es;
      es.onopen = () => {
        setConnected(true);
        setOpens((n) => n + 1);
      };
      const take = (message: MessageEvent<string>) => {
        try {
          const event = JSON.parse(message.data) as TimelineEvent;
          if (log.current.add([event])) setVersion((v) => v + 1);
        } catch {
          // A frame that is not an event is ignored; the next event still arrives.
        }
      };
      for (const type of EXECUTION_EVENT_TYPES) es.addEventListener(type, take);
      es.onerror = () => {
        setConnected(false);
        if (es.readyState !== EventSource.CLOSED) return; // the browser reconnects by itself
        es.close();
        // Still signed in? A 401 here sends the console back to the sign-in page.
        timer = window.setTimeout(() => {
          get('/v1/me').then(connect, () => {
            timer = window.setTimeout(connect, RECONNECT_MS);
          });
        }, RECONNECT_MS);
      };
    };
    connect();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
      source?.close();
    };
  }, [executionId]);

  return { events: log.current.events, connected, opens };
}
