import React from 'react';

import {
  basename,
  costTitle,
  formatCost,
  formatElapsed,
  formatMetrics,
  formatStart,
  headlineMetric,
  shortId
} from '../format';
import { IJob } from '../types';
import { StateBadge } from './StateBadge';

/**
 * What hovering a row says: the full name and id, when and how long, where, on what, at what
 * cost, its last metrics (a narrow sidebar leaves no room for them in the row).
 */
export function rowTitle(job: IJob): string {
  return [
    job.name,
    job.id,
    `started ${formatStart(job)}, ran ${formatElapsed(job.elapsed)}`,
    job.notebook ? basename(job.notebook) : '(no notebook)',
    `${job.backend} · ${formatCost(job)} (${costTitle(job)})`,
    ...(job.last_metrics && Object.keys(job.last_metrics).length
      ? [`last: ${formatMetrics(job.last_metrics)}`]
      : []),
    ...(job.metric_flags ?? []),
    ...(job.error && job.state === 'failed' ? [job.error] : []),
    'click for logs and details'
  ].join('\n');
}

/**
 * One job in the sidebar list, on one line: state, a sweep trial's number, name, last loss or
 * what went wrong, restarts, elapsed time and short id; the rest on hover. In a narrow sidebar
 * the name gives way first (an ellipsis), then the metric and the time; the state, the trial's
 * number and the short id (what `%tfc_attach` takes) are always whole.
 */
export function JobRow(props: {
  job: IJob;
  onOpen: (job: IJob) => void;
  /** Picked for comparing; toggled by the row's check box. */
  picked?: boolean;
  onPick?: (id: string) => void;
  /** Its number in its sweep (a trial's row); shown before its name. */
  trial?: number | null;
}): JSX.Element {
  const { job } = props;
  const metric = headlineMetric(job.last_metrics);
  const failed = job.error && job.state === 'failed';
  return (
    <li
      className="tfc-JobRow"
      data-job-id={job.id}
      data-state={job.state}
      title={rowTitle(job)}
      onClick={event => {
        event.stopPropagation();
        props.onOpen(job);
      }}
    >
      {props.onPick ? (
        <input
          type="checkbox"
          className="tfc-JobRow-pick"
          title="pick to compare with other jobs"
          aria-label={`pick ${job.name} to compare`}
          checked={!!props.picked}
          onClick={event => event.stopPropagation()}
          onChange={() => props.onPick?.(job.id)}
        />
      ) : null}
      <StateBadge state={job.state} />
      {props.trial !== undefined && props.trial !== null ? (
        <span className="tfc-JobRow-trial" title={`trial ${props.trial}`}>
          #{props.trial}
        </span>
      ) : null}
      <span className="tfc-JobRow-name">{job.name}</span>
      {job.metric_flags?.length ? (
        <span className="tfc-JobRow-flag">⚠ {job.metric_flags.join(', ')}</span>
      ) : failed ? (
        <span className="tfc-JobRow-error">{job.error}</span>
      ) : metric ? (
        <span
          className="tfc-JobRow-metric"
          title={`last: ${formatMetrics(job.last_metrics ?? {})}`}
        >
          {metric}
        </span>
      ) : null}
      {job.restarts ? (
        <span
          className="tfc-JobRow-restarts"
          title="replicas restarted after one died; training resumed from its last saved epoch"
        >
          ↻{job.restarts}
        </span>
      ) : null}
      <span className="tfc-JobRow-elapsed">{formatElapsed(job.elapsed)}</span>
      <span
        className="tfc-JobRow-id"
        title="the short id: %tfc_attach takes it"
      >
        {shortId(job.id)}
      </span>
    </li>
  );
}
