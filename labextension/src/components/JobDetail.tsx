import React, { useEffect, useState } from 'react';

import { Dialog, showDialog } from '@jupyterlab/apputils';

import { cancelJob, deleteJob, openTensorBoard } from '../api';
import { askRemove } from '../confirm';
import { ICellLink, linkOfLocation } from '../celllink';
import {
  costTitle,
  failedReplica,
  formatCost,
  formatCreated,
  formatElapsed
} from '../format';
import { TfcApiError } from '../request';
import { JobStore, useJobStore } from '../store';
import { isScriptPath } from '../target';
import { IJob } from '../types';
import { LogView } from './LogView';
import { MetricsView } from './MetricsView';
import { StateBadge } from './StateBadge';

/**
 * A job: its state, links, cancel, its training curves, and per-replica logs that follow. The
 * state comes from the extension's one {@link JobStore}, the one the sidebar shows. A failed
 * job's view opens on the replica that failed, and links to the notebook cell it failed at
 * (`onGoToCell`), as its cell does.
 */
export function JobDetail(props: {
  jobId: string;
  store: JobStore;
  /** Open the job's notebook on the cell (and line) the job failed at. */
  onGoToCell?: (job: IJob, link: ICellLink) => void;
}): JSX.Element {
  const { store, jobId } = props;
  useJobStore(store);
  useEffect(() => store.watch(jobId), [store, jobId]);
  // the replica tab the user picked (null: none yet, the view picks)
  const [replica, setReplica] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [cancelling, setCancelling] = useState(false);
  const [verbose, setVerbose] = useState(false);
  const job = store.job(jobId);

  const onCancel = async (): Promise<void> => {
    const running = store.job(jobId);
    if (running && running.elapsed > 60) {
      // a long job is not stopped by a stray click
      const answer = await showDialog({
        title: 'Stop this job?',
        body: `${running.name} has run for ${formatElapsed(running.elapsed)}. Every replica stops; its logs and what it saved stay.`,
        buttons: [
          Dialog.cancelButton({ label: 'Keep running' }),
          Dialog.warnButton({ label: 'Stop the job' })
        ]
      });
      if (!answer.button.accept) {
        return;
      }
    }
    setCancelling(true);
    try {
      store.put(await cancelJob(jobId));
      setError(null);
    } catch (e) {
      setError(e instanceof TfcApiError ? e.text : String(e));
    } finally {
      setCancelling(false);
    }
  };

  const onTensorBoard = async (): Promise<void> => {
    // opened on the click (a window opened after an answer is a blocked pop-up), then sent
    const opened = window.open('', '_blank');
    try {
      const url = await openTensorBoard(jobId);
      if (opened) {
        opened.location.href = url;
      }
      setError(null);
    } catch (e) {
      opened?.close();
      setError(e instanceof TfcApiError ? e.text : String(e));
    }
  };

  const onDelete = async (): Promise<void> => {
    const ended = store.job(jobId);
    if (!ended) {
      return;
    }
    const answer = await askRemove(
      'Remove this job?',
      `${ended.name} (${ended.state}) leaves the list. Its folder on this machine (logs, outputs, checkpoints) can go too; what it wrote to Cloud Storage stays.`,
      'Remove with its files',
      'Remove from the list'
    );
    if (!answer) {
      return;
    }
    try {
      await deleteJob(jobId, answer.files);
      store.forget([jobId]);
      setError(null);
    } catch (e) {
      setError(e instanceof TfcApiError ? e.text : String(e));
    }
  };

  if (!job) {
    const problem = store.jobError(jobId);
    return (
      <div className="tfc-JobDetail">
        {problem ? problem.text : 'Loading...'}
      </div>
    );
  }
  // The watcher's own log only when it has something to say (it is usually empty).
  const replicas = [
    ...(job.replicas.length ? job.replicas : ['chief']),
    ...(store.supervisorBytes(jobId) > 0 ? ['supervisor'] : [])
  ];
  // unless a tab was picked: the replica that failed (its log says why), else the chief
  const preferred = failedReplica(job) ?? 'chief';
  const shownReplica =
    replica !== null && replicas.includes(replica)
      ? replica
      : replicas.includes(preferred)
        ? preferred
        : replicas[0];
  // a cancel the user asked for is no failure: said in a neutral colour, if at all
  const cancelled = job.state === 'cancelled' || job.state === 'cancelling';
  const link =
    job.state === 'failed' && job.notebook && !isScriptPath(job.notebook)
      ? linkOfLocation(job.error_location)
      : null;
  const workers = job.spec.worker_count
    ? ` + ${job.spec.worker_count} worker(s)`
    : '';
  return (
    <div className="tfc-JobDetail" data-job-id={job.id} data-state={job.state}>
      <div className="tfc-JobDetail-header">
        <h2>{job.name}</h2>
        <StateBadge state={job.state} />
        <button
          className="jp-Button jp-mod-styled jp-mod-warn tfc-CancelButton"
          disabled={job.terminal || job.state === 'cancelling' || cancelling}
          title={
            job.terminal
              ? `the job has ended (${job.state})`
              : 'stop every replica of the job'
          }
          onClick={onCancel}
        >
          {cancelling ? 'Cancelling...' : 'Cancel job'}
        </button>
        {job.terminal ? (
          <button
            className="jp-Button jp-mod-styled tfc-DeleteButton"
            title="remove the job from the list (and, if you like, its files here)"
            onClick={onDelete}
          >
            Remove
          </button>
        ) : null}
      </div>
      <table className="tfc-JobFacts">
        <tbody>
          <tr>
            <th>id</th>
            <td>
              <code>{job.id}</code>
            </td>
          </tr>
          <tr>
            <th>backend</th>
            <td>
              {job.backend}: chief{workers}, strategy{' '}
              {String(job.spec.resolved_strategy ?? '')}
            </td>
          </tr>
          <tr>
            <th>
              {job.notebook && isScriptPath(job.notebook)
                ? 'script'
                : 'notebook'}
            </th>
            <td>{job.notebook ?? '(none)'}</td>
          </tr>
          <tr>
            <th>created</th>
            <td>{formatCreated(job)}</td>
          </tr>
          <tr>
            <th>elapsed</th>
            <td className="tfc-Elapsed">{formatElapsed(job.elapsed)}</td>
          </tr>
          {job.restarts ? (
            <tr>
              <th>restarts</th>
              <td className="tfc-Restarts">
                {job.restarts === 1
                  ? 'restarted once'
                  : `restarted ${job.restarts} times`}{' '}
                after a replica died; training resumed from its last saved epoch
              </td>
            </tr>
          ) : null}
          <tr>
            <th>cost</th>
            <td title={costTitle(job)}>
              {formatCost(job)} ({costTitle(job)})
            </td>
          </tr>
          <tr>
            <th>job folder</th>
            <td>
              <code>{job.job_dir}</code>
            </td>
          </tr>
          {job.error && job.state !== 'succeeded' && !cancelled ? (
            <tr>
              <th>error</th>
              <td className="tfc-Error">
                {job.error}
                {job.error_location && !(link && props.onGoToCell)
                  ? ` (${job.error_location})`
                  : ''}
                {link && props.onGoToCell ? (
                  <div className="tfc-GoToCellRow">
                    <a
                      href="#"
                      className="tfc-GoToCell"
                      title={`open ${job.notebook} and select the cell where the job failed`}
                      onClick={event => {
                        event.preventDefault();
                        props.onGoToCell?.(job, link);
                      }}
                    >
                      Go to {link.text}
                    </a>
                  </div>
                ) : null}
              </td>
            </tr>
          ) : null}
          {job.error && cancelled && job.error.trim() !== 'cancelled' ? (
            <tr>
              <th>ended</th>
              <td className="tfc-Ended">{job.error}</td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <div className="tfc-Links">
        {job.console_url ? (
          <a href={job.console_url} target="_blank" rel="noreferrer">
            Vertex AI console
          </a>
        ) : null}
        {job.tensorboard_url ? (
          <a href={job.tensorboard_url} target="_blank" rel="noreferrer">
            TensorBoard
          </a>
        ) : null}
        {!job.console_url && !job.tensorboard_url ? (
          <button
            className="jp-Button jp-mod-styled tfc-TensorBoardButton"
            title="TensorBoard on the job's TensorBoard logs, served from this machine"
            onClick={onTensorBoard}
          >
            TensorBoard
          </button>
        ) : null}
      </div>
      {error ? <div className="tfc-Error">{error}</div> : null}
      <MetricsView metrics={store.metrics(jobId)} last={job.last_metrics} />
      <div className="tfc-ReplicaTabs" role="tablist">
        {replicas.map(name => (
          <button
            key={name}
            role="tab"
            aria-selected={name === shownReplica}
            className={`tfc-ReplicaTab${name === shownReplica ? ' tfc-mod-active' : ''}`}
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
      <LogView jobId={job.id} replica={shownReplica} verbose={verbose} />
    </div>
  );
}
