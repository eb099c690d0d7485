import React, { useState } from 'react';

import { cancelJob, getJob } from '../api';
import { costTitle, formatCost, formatCreated, formatElapsed } from '../format';
import { usePoll } from '../hooks';
import { TfcApiError } from '../request';
import { IJob } from '../types';
import { LogView } from './LogView';
import { StateBadge } from './StateBadge';

/** A job: its state, links, cancel, and per-replica logs that follow. */
export function JobDetail(props: { jobId: string }): JSX.Element {
  const [job, setJob] = useState<IJob | null>(null);
  const [replica, setReplica] = useState('chief');
  const [error, setError] = useState<string | null>(null);
  const [cancelling, setCancelling] = useState(false);
  const [verbose, setVerbose] = useState(false);

  usePoll(
    async () => {
      const current = await getJob(props.jobId);
      setJob(current);
      return !current.terminal;
    },
    2000,
    [props.jobId],
    e => setError(e instanceof TfcApiError ? e.text : String(e))
  );

  const onCancel = async (): Promise<void> => {
    setCancelling(true);
    try {
      setJob(await cancelJob(props.jobId));
      setError(null);
    } catch (e) {
      setError(e instanceof TfcApiError ? e.text : String(e));
    } finally {
      setCancelling(false);
    }
  };

  if (!job) {
    return <div className="tfc-JobDetail">{error ?? 'Loading...'}</div>;
  }
  const replicas = [...(job.replicas.length ? job.replicas : ['chief']), 'supervisor'];
  const workers = job.spec.worker_count ? ` + ${job.spec.worker_count} worker(s)` : '';
  return (
    <div className="tfc-JobDetail" data-job-id={job.id} data-state={job.state}>
      <div className="tfc-JobDetail-header">
        <h2>{job.name}</h2>
        <StateBadge state={job.state} />
        <button
          className="jp-Button jp-mod-styled jp-mod-warn tfc-CancelButton"
          disabled={job.terminal || cancelling}
          onClick={onCancel}
        >
          {cancelling ? 'Cancelling...' : 'Cancel job'}
        </button>
      </div>
      <table className="tfc-JobFacts">
        <tbody>
          <tr><th>id</th><td><code>{job.id}</code></td></tr>
          <tr><th>backend</th><td>{job.backend}: chief{workers}, strategy {String(job.spec.resolved_strategy ?? '')}</td></tr>
          <tr><th>notebook</th><td>{job.notebook ?? '(none)'}</td></tr>
          <tr><th>created</th><td>{formatCreated(job)}</td></tr>
          <tr><th>elapsed</th><td className="tfc-Elapsed">{formatElapsed(job.elapsed)}</td></tr>
          <tr><th>cost</th><td title={costTitle(job)}>{formatCost(job)} ({costTitle(job)})</td></tr>
          <tr><th>job folder</th><td><code>{job.job_dir}</code></td></tr>
          {job.error && job.state !== 'succeeded' ? (
            <tr>
              <th>error</th>
              <td className="tfc-Error">
                {job.error}
                {job.error_location ? ` (${job.error_location})` : ''}
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <div className="tfc-Links">
        {job.console_url ? (
          <a href={job.console_url} target="_blank" rel="noreferrer">Vertex AI console</a>
        ) : null}
        {job.tensorboard_url ? (
          <a href={job.tensorboard_url} target="_blank" rel="noreferrer">TensorBoard</a>
        ) : null}
        {!job.console_url && !job.tensorboard_url ? (
          <span className="tfc-Muted">Vertex AI console and TensorBoard links appear for Vertex AI jobs.</span>
        ) : null}
      </div>
      {error ? <div className="tfc-Error">{error}</div> : null}
      <div className="tfc-ReplicaTabs" role="tablist">
        {replicas.map(name => (
          <button
            key={name}
            role="tab"
            aria-selected={name === replica}
            className={`tfc-ReplicaTab${name === replica ? ' tfc-mod-active' : ''}`}
            data-replica={name}
            onClick={() => setReplica(name)}
          >
            {name}
          </button>
        ))}
      </div>
      <label className="tfc-VerboseToggle">
        <input
          type="checkbox"
          checked={verbose}
          onChange={event => setVerbose(event.target.checked)}
        />{' '}
        Show TensorFlow's start-up lines
      </label>
      <LogView jobId={job.id} replica={replica} verbose={verbose} />
    </div>
  );
}
