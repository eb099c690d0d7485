import React, { useState } from 'react';

import { clearFinished } from '../api';
import { askRemove } from '../confirm';

import { matchesFilter } from '../format';
import {
  groupJobs,
  IJobGroup,
  sections,
  sweepSummary,
  trialOf
} from '../groups';
import { JobStore, useJobStore } from '../store';
import { IJob } from '../types';
import { JobRow } from './JobRow';
import { ServerMissing } from './ServerMissing';

/** The jobs picked for comparing. */
interface IPicks {
  has: (id: string) => boolean;
  toggle: (id: string) => void;
}

/** A sweep: one row, its trials under it (open while one runs, or when opened). */
function SweepRow(props: {
  group: IJobGroup;
  onOpen: (job: IJob) => void;
  onOpenSweep?: (id: string) => void;
  picks: IPicks;
}): JSX.Element {
  const { group } = props;
  const [open, setOpen] = useState(group.running);
  const { name, text } = sweepSummary(group);
  return (
    <li
      className="tfc-SweepRow"
      data-sweep={group.sweep ?? ''}
      data-running={group.running ? 'true' : 'false'}
    >
      <div
        className="tfc-SweepRow-summary"
        role="button"
        aria-expanded={open}
        title={`sweep ${group.sweep}: ${text}\nclick to ${open ? 'hide' : 'show'} its trials`}
        onClick={() => setOpen(!open)}
      >
        <span className="tfc-Caret">{open ? '▾' : '▸'}</span>
        <span className="tfc-SweepRow-name">{name}</span>
        <span className="tfc-SweepRow-count">{text}</span>
        {props.onOpenSweep && group.sweep ? (
          <button
            className="tfc-SweepRow-open"
            title="Open the sweep: its trials' table and plot"
            onClick={event => {
              event.stopPropagation(); // open the tab, not fold the row
              props.onOpenSweep?.(group.sweep as string);
            }}
          >
            Trials
          </button>
        ) : null}
      </div>
      {open ? (
        <ul className="tfc-JobList tfc-SweepRow-trials">
          {group.jobs.map(job => (
            <JobRow
              key={job.id}
              job={job}
              onOpen={props.onOpen}
              picked={props.picks.has(job.id)}
              onPick={props.picks.toggle}
              trial={trialOf(job)}
            />
          ))}
        </ul>
      ) : null}
    </li>
  );
}

/** Running or Finished: a title that folds the section, and its rows. */
function JobSection(props: {
  kind: 'running' | 'finished';
  title: string;
  groups: IJobGroup[];
  onOpen: (job: IJob) => void;
  onOpenSweep?: (id: string) => void;
  picks: IPicks;
}): JSX.Element | null {
  const [open, setOpen] = useState(true);
  if (!props.groups.length) {
    return null;
  }
  const count = props.groups.reduce((n, g) => n + g.jobs.length, 0);
  return (
    <section className="tfc-JobSection" data-section={props.kind}>
      <div
        className="tfc-JobSection-title"
        role="button"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
      >
        <span className="tfc-Caret">{open ? '▾' : '▸'}</span>
        {props.title}
        <span className="tfc-JobSection-count">{count}</span>
      </div>
      {open ? (
        <ul className="tfc-JobList">
          {props.groups.map(group =>
            group.sweep === null ? (
              <JobRow
                key={group.key}
                job={group.jobs[0]}
                onOpen={props.onOpen}
                picked={props.picks.has(group.key)}
                onPick={props.picks.toggle}
              />
            ) : (
              <SweepRow
                key={group.key}
                group={group}
                onOpen={props.onOpen}
                onOpenSweep={props.onOpenSweep}
                picks={props.picks}
              />
            )
          )}
        </ul>
      ) : null}
    </section>
  );
}

/** Props of {@link JobsPanel}. */
export interface IJobsPanelProps {
  /** The jobs, as the one poller of the extension has them. */
  store: JobStore;
  /** Open a job's detail view. */
  onOpen: (job: IJob) => void;
  /** Open the launch form for the current notebook or Python script. */
  onLaunch: () => void;
  /** Open a sweep's tab (its trials' table and plot). */
  onOpenSweep?: (id: string) => void;
  /** Compare the picked jobs (two or more). */
  onCompare?: (ids: string[]) => void;
}

/**
 * The sidebar: every job (launched here or by kernels), newest first, in Running and Finished
 * sections under a header and a filter that stay in view; a sweep is one row with its trials.
 */
export function JobsPanel(props: IJobsPanelProps): JSX.Element {
  const { store } = props;
  useJobStore(store);
  const [filter, setFilter] = useState('');
  const jobs = store.jobs;
  const error = store.error;
  const ended = (jobs ?? []).filter(job => job.terminal);
  const [clearError, setClearError] = useState<string | null>(null);
  const [picked, setPicked] = useState<string[]>([]);
  const known = new Set((jobs ?? []).map(job => job.id));
  const pickedNow = picked.filter(id => known.has(id)); // a cleared job is no longer picked
  const picks: IPicks = {
    has: id => pickedNow.includes(id),
    toggle: id =>
      setPicked(now =>
        now.includes(id) ? now.filter(p => p !== id) : [...now, id]
      )
  };

  const onClear = async (): Promise<void> => {
    const answer = await askRemove(
      `Clear ${ended.length} finished job(s)?`,
      'They leave the list; running and queued jobs stay. Their folders on this machine (logs, outputs, checkpoints) can go too.',
      'Clear with their files',
      'Clear the list'
    );
    if (!answer) {
      return;
    }
    try {
      store.forget(await clearFinished(answer.files));
      setClearError(null);
    } catch (e) {
      setClearError(String(e));
    }
  };

  let body: JSX.Element;
  if (error && error.serverMissing) {
    body = <ServerMissing />;
  } else if (jobs === null) {
    body = (
      <p className="tfc-Muted">{error ? error.text : 'Loading jobs...'}</p>
    );
  } else if (jobs.length === 0) {
    body = (
      <p className="tfc-Muted">
        No jobs yet. Open a notebook or a Python script and press <b>Launch</b>{' '}
        in its toolbar, or run a cell with <code>%%tfc_run</code>.
      </p>
    );
  } else {
    const shown = jobs.filter(job => matchesFilter(job, filter));
    const { running, finished } = sections(groupJobs(shown));
    body = shown.length ? (
      <>
        <JobSection
          kind="running"
          title="Running"
          groups={running}
          onOpen={props.onOpen}
          onOpenSweep={props.onOpenSweep}
          picks={picks}
        />
        <JobSection
          kind="finished"
          title="Finished"
          groups={finished}
          onOpen={props.onOpen}
          onOpenSweep={props.onOpenSweep}
          picks={picks}
        />
      </>
    ) : (
      <p className="tfc-Muted tfc-NoMatch">No job matches "{filter}".</p>
    );
  }
  const filterBox =
    jobs && jobs.length ? (
      <div className="tfc-JobFilter">
        <input
          type="search"
          className="jp-mod-styled tfc-JobFilter-input"
          placeholder="Filter jobs"
          title="Show the jobs whose name, id, notebook, state or backend hold every word"
          aria-label="Filter jobs"
          value={filter}
          onChange={event => setFilter(event.target.value)}
        />
        {filter ? (
          <span className="tfc-Muted tfc-JobFilter-count">
            {jobs.filter(job => matchesFilter(job, filter)).length} of{' '}
            {jobs.length}
          </span>
        ) : null}
      </div>
    ) : null;
  return (
    <div className="tfc-JobsPanel">
      <div className="tfc-JobsPanel-top">
        <div className="tfc-JobsPanel-header">
          <h2>TensorFlow jobs</h2>
          <button
            className="jp-Button jp-mod-styled jp-mod-accept tfc-LaunchShortcut"
            title="Launch the notebook or Python script in the editor (unsaved edits included)"
            onClick={props.onLaunch}
          >
            Launch on ...
          </button>
          {pickedNow.length >= 2 && props.onCompare ? (
            <button
              className="jp-Button jp-mod-styled tfc-CompareButton"
              title="their curves overlaid in one view, and the options they differ in"
              onClick={() => props.onCompare?.(pickedNow)}
            >
              Compare {pickedNow.length}
            </button>
          ) : null}
          {ended.length ? (
            <button
              className="jp-Button jp-mod-styled tfc-ClearFinished"
              title="remove the jobs that have ended from the list"
              onClick={onClear}
            >
              Clear finished
            </button>
          ) : null}
        </div>
        {clearError ? <p className="tfc-Error">{clearError}</p> : null}
        {error && !error.serverMissing && jobs !== null ? (
          <p className="tfc-Error">{error.text}</p>
        ) : null}
        {filterBox}
      </div>
      {body}
    </div>
  );
}
