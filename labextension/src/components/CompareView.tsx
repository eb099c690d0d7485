import React, { useEffect, useState } from 'react';

import { getCode, getMetrics } from '../api';
import {
  codeLines,
  diffHunks,
  diffLines,
  differingOptions,
  extent,
  notebookLine,
  polylines,
  SERIES_COLORS,
  seriesOf,
  sharedMetrics
} from '../compare';
import { formatMetric } from '../format';
import { JobStore, useJobStore } from '../store';
import { ICode, IJob, IMetrics } from '../types';

const WIDTH = 560;
const HEIGHT = 220;
const LEFT = 56;
const TOP = 10;
const BOTTOM = 26;

/** Props of {@link CompareView}. */
export interface ICompareViewProps {
  ids: string[];
  store: JobStore;
}

/**
 * Several jobs side by side: one metric's curves overlaid (the loss first, any metric every
 * job reported), and the options they differ in. Polls while one of them runs.
 */
export function CompareView(props: ICompareViewProps): JSX.Element {
  useJobStore(props.store);
  const jobs = props.ids
    .map(id => props.store.job(id))
    .filter((j): j is IJob => j !== undefined);
  const [runs, setRuns] = useState<(IMetrics | null)[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<string>('');
  const [codes, setCodes] = useState<(ICode | null)[]>([]);
  const running = jobs.some(j => !j.terminal);
  const key = props.ids.join(' ');

  useEffect(() => {
    let live = true;
    void Promise.all(
      key.split(' ').map(id => getCode(id).catch(() => null))
    ).then(got => live && setCodes(got));
    return () => {
      live = false;
    };
  }, [key]);

  useEffect(() => {
    let live = true;
    const load = async (): Promise<void> => {
      try {
        const got = await Promise.all(
          key.split(' ').map(id => getMetrics(id).catch(() => null))
        );
        if (live) {
          setRuns(got);
          setError(null);
        }
      } catch (e) {
        if (live) {
          setError(String(e));
        }
      }
    };
    void load();
    const timer = running ? window.setInterval(load, 3000) : undefined;
    return () => {
      live = false;
      if (timer !== undefined) {
        window.clearInterval(timer);
      }
    };
  }, [key, running]);

  const pairs = props.ids
    .map((id, i) => ({ job: props.store.job(id), run: runs[i] ?? null }))
    .filter((p): p is { job: IJob; run: IMetrics } => !!p.job && !!p.run);
  const names = sharedMetrics(pairs.map(p => p.run));
  const name = names.includes(picked) ? picked : (names[0] ?? '');
  const series = name
    ? seriesOf(
        pairs.map(p => p.job),
        pairs.map(p => p.run),
        name
      )
    : [];
  const lines = polylines(series, WIDTH - LEFT - 10, HEIGHT - TOP - BOTTOM);
  const range = extent(series);
  const longest = Math.max(0, ...series.map(s => s.values.length));
  const options = differingOptions(jobs);

  return (
    <div className="tfc-Compare" data-jobs={props.ids.join(' ')}>
      <NotebooksAndCode jobs={jobs} codes={codes} />
      <h3 className="tfc-Compare-heading">Options that differ</h3>
      {options.length ? (
        <table className="tfc-Compare-options">
          <thead>
            <tr>
              <th>option</th>
              {jobs.map(j => (
                <th key={j.id}>{j.name}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {options.map(row => (
              <tr key={row.name} data-option={row.name}>
                <td>{row.name}</td>
                {row.values.map((v, i) => (
                  <td key={i}>{v}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="tfc-Muted">None: the jobs ran with the same options.</p>
      )}
      <h3 className="tfc-Compare-heading">Curves</h3>
      {error ? <p className="tfc-Error">{error}</p> : null}
      {names.length ? (
        <label className="tfc-Compare-metric">
          Metric{' '}
          <select
            className="jp-mod-styled"
            value={name}
            onChange={event => setPicked(event.target.value)}
          >
            {names.map(n => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
      ) : (
        <p className="tfc-Muted">
          {pairs.length < props.ids.length
            ? 'Waiting for every job to report an epoch.'
            : 'These jobs report no metric in common.'}
        </p>
      )}
      {name && range ? (
        <svg
          className="tfc-Compare-plot"
          width={WIDTH}
          height={HEIGHT}
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          role="img"
          aria-label={`${name} of each job by epoch`}
        >
          <rect
            x={LEFT}
            y={TOP}
            width={WIDTH - LEFT - 10}
            height={HEIGHT - TOP - BOTTOM}
            fill="none"
            stroke="currentColor"
            strokeOpacity={0.4}
          />
          <text x={LEFT - 4} y={TOP + 8} textAnchor="end" fill="currentColor">
            {formatMetric(range[1])}
          </text>
          <text
            x={LEFT - 4}
            y={HEIGHT - BOTTOM}
            textAnchor="end"
            fill="currentColor"
          >
            {formatMetric(range[0])}
          </text>
          <text x={LEFT} y={HEIGHT - 8} fill="currentColor">
            1
          </text>
          <text
            x={WIDTH - 10}
            y={HEIGHT - 8}
            textAnchor="end"
            fill="currentColor"
          >
            epoch {longest}
          </text>
          {lines.map((line, i) =>
            line.runs.map((points, k) => (
              <polyline
                key={`${line.jobId}-${k}`}
                className="tfc-Compare-line"
                data-job-id={line.jobId}
                transform={`translate(${LEFT},${TOP})`}
                points={points}
                fill="none"
                stroke={SERIES_COLORS[i % SERIES_COLORS.length]}
                strokeWidth={1.8}
              />
            ))
          )}
        </svg>
      ) : null}
      {series.length ? (
        <ul className="tfc-Compare-legend">
          {series.map((s, i) => {
            const last = [...s.values].reverse().find(v => v !== null);
            return (
              <li key={s.jobId} data-job-id={s.jobId}>
                <span
                  className="tfc-Compare-swatch"
                  style={{
                    background: SERIES_COLORS[i % SERIES_COLORS.length]
                  }}
                />
                {s.label}
                {last !== undefined && last !== null
                  ? ` — ${name} ${formatMetric(last)}`
                  : ''}
              </li>
            );
          })}
        </ul>
      ) : null}
    </div>
  );
}

/**
 * What differs that matters most, first: the notebooks the jobs ran (the same one or each
 * job's), then their code as a diff of the cells against the first job's.
 */
function NotebooksAndCode(props: {
  jobs: IJob[];
  codes: (ICode | null)[];
}): JSX.Element {
  const notebooks = notebookLine(props.jobs);
  const first = props.codes[0];
  const others = props.jobs.slice(1).map((job, i) => ({
    job,
    code: props.codes[i + 1] ?? null
  }));
  return (
    <>
      <h2
        className={`tfc-Compare-notebooks${notebooks.same ? '' : ' tfc-Compare-differs'}`}
      >
        {notebooks.text}
      </h2>
      <h3 className="tfc-Compare-heading">Code</h3>
      {!first || props.codes.length < props.jobs.length ? (
        <p className="tfc-Muted">Reading each job's code…</p>
      ) : (
        others.map(({ job, code }) => (
          <CodeDiff key={job.id} first={first} other={code} job={job} />
        ))
      )}
    </>
  );
}

/** The first job's code against another's: changed lines with two lines around them. */
function CodeDiff(props: {
  first: ICode;
  other: ICode | null;
  job: IJob;
}): JSX.Element {
  const missing = props.first.missing ?? props.other?.missing;
  if (!props.other || missing) {
    return (
      <p className="tfc-Muted">
        {props.job.name}: {missing ?? 'its code could not be read'}
      </p>
    );
  }
  const hunks = diffHunks(
    diffLines(codeLines(props.first), codeLines(props.other))
  );
  if (!hunks.length) {
    return (
      <p className="tfc-Compare-samecode" data-job-id={props.job.id}>
        {props.job.name}: the same code as the first job.
      </p>
    );
  }
  return (
    <pre className="tfc-Compare-diff" data-job-id={props.job.id}>
      {hunks.map((line, i) =>
        line === null ? (
          <div key={i} className="tfc-Compare-gap">
            …
          </div>
        ) : (
          <div key={i} className={`tfc-Compare-diff-${OPS[line.op]}`}>
            {`${line.op} ${line.text}`}
          </div>
        )
      )}
    </pre>
  );
}

const OPS = { ' ': 'same', '-': 'removed', '+': 'added' } as const;
