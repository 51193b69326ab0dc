// A small history router: the console lives under /console and every deep link loads index.html.
import { useEffect, useState, type MouseEvent, type ReactNode } from 'react';

export const BASE = '/console';
const CHANGE = 'flostra:navigate';

export function navigate(to: string, replace = false): void {
  const url = to.startsWith(BASE) ? to : BASE + to;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  window.dispatchEvent(new Event(CHANGE));
}

export interface Location {
  /** The path below /console, from "/". */
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  const rest = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return { path: rest === '' ? '/' : rest, query: new URLSearchParams(location.search) };
}

export function useLocation(): Location {
  const [where, setWhere] = useState(current);
  useEffect(() => {
    const update = () => setWhere(current());
    window.addEventListener('popstate', update);
    window.addEventListener(CHANGE, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(CHANGE, update);
    };
  }, []);
  return where;
}

export function Link(props: { to: string; children: ReactNode; className?: string; title?: string }) {
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.to);
  };
  return (
    <a href={BASE + props.to} onClick={onClick} className={props.className} title={props.title}>
      {props.children}
    </a>
  );
}
