import React, { useEffect, useRef, useState } from 'react';

import { readLogs } from '../api';
import { usePoll } from '../hooks';
import { TfcApiError } from '../request';

/** The most characters kept on screen; older text is dropped from the top. */
const MAX_CHARS = 2_000_000;

/**
 * One replica's log, followed from the start until the job ends; unless `verbose`, without
 * TensorFlow's start-up chatter and the runtime's status lines (the server leaves them out).
 */
export function LogView(props: {
  jobId: string;
  replica: string;
  verbose?: boolean;
}): JSX.Element {
  const [text, setText] = useState('');
  const [partial, setPartial] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const offset = useRef(0);
  const pre = useRef<HTMLPreElement>(null);
  const quiet = !props.verbose;
  const key = `${props.jobId}/${props.replica}/${quiet ? 'quiet' : 'all'}`;
  const shown = useRef(key);

  useEffect(() => {
    shown.current = key;
    offset.current = 0;
    setText('');
    setPartial('');
    setDone(false);
  }, [key]);

  usePoll(
    async () => {
      if (shown.current !== key) {
        return false; // another replica is shown now
      }
      let chunk = await readLogs(
        props.jobId,
        props.replica,
        offset.current,
        quiet
      );
      let added = chunk.text;
      while (chunk.more) {
        offset.current = chunk.next_offset;
        chunk = await readLogs(
          props.jobId,
          props.replica,
          offset.current,
          quiet
        );
        added += chunk.text;
      }
      if (shown.current !== key) {
        return false;
      }
      offset.current = chunk.next_offset;
      if (added) {
        setText(previous => (previous + added).slice(-MAX_CHARS));
      }
      setPartial(chunk.partial ?? ''); // a bar being drawn: replaced at each poll
      setError(null);
      if (chunk.terminal) {
        setDone(true);
        return false;
      }
      return true;
    },
    1000,
    [key],
    e => setError(e instanceof TfcApiError ? e.text : String(e))
  );

  useEffect(() => {
    const node = pre.current;
    if (node) {
      node.scrollTop = node.scrollHeight;
    }
  }, [text, partial]);

  return (
    <div className="tfc-LogView">
      {error ? <div className="tfc-Error">{error}</div> : null}
      <pre ref={pre} className="tfc-LogText" data-replica={props.replica}>
        {text || partial
          ? text + partial
          : done
            ? '(this replica printed nothing)'
            : 'waiting for output...'}
      </pre>
      {!done ? (
        <div className="tfc-Muted tfc-Following">following...</div>
      ) : null}
    </div>
  );
}
