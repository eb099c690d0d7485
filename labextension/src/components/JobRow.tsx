import React from 'react';

import {
  basename,
  costTitle,
  formatCost,
  formatCreated,
  formatElapsed,
  formatStart,
  headlineMetric,
  shortId
} from '../format';
import { IJob } from '../types';
import { StateBadge } from './StateBadge';

/**
 * One job in the sidebar list: name and state; when it started, its notebook and its last loss;
 * backend, elapsed time, cost and short id.
 */
export function JobRow(props: {
  job: IJob;
  onOpen: (job: IJob) => void;
}): JSX.Element {
  const { job } = props;
  const metric = headlineMetric(job.last_metrics);
  return (
    <li
      className="tfc-JobRow"
      data-job-id={job.id}
      data-state={job.state}
      title={`${job.id}\n${job.notebook ?? '(no notebook)'}\nclick for logs and details`}
      onClick={() => props.onOpen(job)}
    >
      <div className="tfc-JobRow-top">
        <span className="tfc-JobRow-name">{job.name}</span>
        <StateBadge state={job.state} />
      </div>
      <div className="tfc-JobRow-meta">
        <span
          className="tfc-JobRow-start"
          title={`started ${formatCreated(job)}`}
        >
          {formatStart(job)}
        </span>
        <span className="tfc-JobRow-notebook">
          {job.notebook ? basename(job.notebook) : '(no notebook)'}
        </span>
        {metric ? <span className="tfc-JobRow-metric">{metric}</span> : null}
      </div>
      <div className="tfc-JobRow-meta">
        <span className="tfc-JobRow-backend">{job.backend}</span>
        <span className="tfc-JobRow-elapsed">{formatElapsed(job.elapsed)}</span>
        {job.restarts ? (
          <span
            className="tfc-JobRow-restarts"
            title="replicas restarted after one died; training resumed from its last saved epoch"
          >
            ↻ {job.restarts}
          </span>
        ) : null}
        <span className="tfc-JobRow-cost" title={costTitle(job)}>
          {formatCost(job)}
        </span>
        <span
          className="tfc-JobRow-id"
          title="the short id: %tfc_attach takes it"
        >
          {shortId(job.id)}
        </span>
      </div>
      {job.metric_flags?.length ? (
        <div className="tfc-JobRow-flag" title={job.metric_flags.join('\n')}>
          ⚠ {job.metric_flags.join(', ')}
        </div>
      ) : null}
      {job.error && job.state === 'failed' ? (
        <div className="tfc-JobRow-error">{job.error}</div>
      ) : null}
    </li>
  );
}
