import React, { useState } from 'react';

import { listJobs } from '../api';
import { usePoll } from '../hooks';
import { TfcApiError } from '../request';
import { IJob } from '../types';
import { JobRow } from './JobRow';
import { ServerMissing } from './ServerMissing';

/** Props of {@link JobsPanel}. */
export interface IJobsPanelProps {
  /** Open a job's detail view. */
  onOpen: (job: IJob) => void;
  /** Open the launch form for the current notebook. */
  onLaunch: () => void;
  /** Seconds between refreshes. */
  refreshSeconds: number;
}

/** The sidebar: every job (launched here or by kernels), refreshed while it is shown. */
export function JobsPanel(props: IJobsPanelProps): JSX.Element {
  const [jobs, setJobs] = useState<IJob[] | null>(null);
  const [error, setError] = useState<TfcApiError | null>(null);

  usePoll(
    async () => {
      try {
        setJobs(await listJobs());
        setError(null);
      } catch (e) {
        setError(e instanceof TfcApiError ? e : new TfcApiError(String(e), 0));
      }
    },
    props.refreshSeconds * 1000,
    [props.refreshSeconds]
  );

  let body: JSX.Element;
  if (error && error.serverMissing) {
    body = <ServerMissing />;
  } else if (jobs === null) {
    body = <p className="tfc-Muted">{error ? error.text : 'Loading jobs...'}</p>;
  } else if (jobs.length === 0) {
    body = (
      <p className="tfc-Muted">
        No jobs yet. Open a notebook and press <b>Launch</b> in its toolbar, or run a cell with{' '}
        <code>%%tfc_run</code>.
      </p>
    );
  } else {
    body = (
      <ul className="tfc-JobList">
        {jobs.map(job => (
          <JobRow key={job.id} job={job} onOpen={props.onOpen} />
        ))}
      </ul>
    );
  }
  return (
    <div className="tfc-JobsPanel">
      <div className="tfc-JobsPanel-header">
        <h2>TensorFlow jobs</h2>
        <button
          className="jp-Button jp-mod-styled jp-mod-accept tfc-LaunchShortcut"
          title="Launch the notebook in the editor (unsaved edits included)"
          onClick={props.onLaunch}
        >
          Launch on ...
        </button>
      </div>
      {error && !error.serverMissing && jobs !== null ? (
        <p className="tfc-Error">{error.text}</p>
      ) : null}
      {body}
    </div>
  );
}
