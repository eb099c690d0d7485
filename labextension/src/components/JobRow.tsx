import React from 'react';

import { costTitle, formatCost, formatElapsed } from '../format';
import { IJob } from '../types';
import { StateBadge } from './StateBadge';

/** One job in the sidebar list: name and id, state, backend, elapsed time, cost. */
export function JobRow(props: { job: IJob; onOpen: (job: IJob) => void }): JSX.Element {
  const { job } = props;
  return (
    <li
      className="tfc-JobRow"
      data-job-id={job.id}
      data-state={job.state}
      title={`${job.id}\nclick for logs and details`}
      onClick={() => props.onOpen(job)}
    >
      <div className="tfc-JobRow-top">
        <span className="tfc-JobRow-name">{job.name}</span>
        <StateBadge state={job.state} />
      </div>
      <div className="tfc-JobRow-meta">
        <span className="tfc-JobRow-backend">{job.backend}</span>
        <span className="tfc-JobRow-elapsed">{formatElapsed(job.elapsed)}</span>
        <span className="tfc-JobRow-cost" title={costTitle(job)}>
          {formatCost(job)}
        </span>
        <span className="tfc-JobRow-id">{job.id.slice(-6)}</span>
      </div>
      {job.error && job.state === 'failed' ? (
        <div className="tfc-JobRow-error">{job.error}</div>
      ) : null}
    </li>
  );
}
