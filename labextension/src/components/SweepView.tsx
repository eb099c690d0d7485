import React, { useMemo, useState } from 'react';

import { getSweep } from '../api';
import { formatElapsed } from '../format';
import { usePoll } from '../hooks';
import { ISweep } from '../types';
import { svgDataUrl } from './MetricsView';
import { ImportanceView, ParallelView } from './SweepCharts';

/** How often the tab reads the sweep while a trial runs. */
export const SWEEP_POLL_MS = 2000;

/** A number as Python's `f"{x:.4g}"` writes it (the cell's table): 4 significant digits,
 * no trailing zeros, an exponent below 1e-4 and from 1e4 on. */
export function g4(x: number): string {
  if (x === 0 || !Number.isFinite(x)) {
    return String(x);
  }
  const [mantissa, power] = x.toExponential(3).split('e');
  const exp = Number(power);
  if (exp < -4 || exp >= 4) {
    const digits = mantissa.replace(/\.?0+$/, '');
    const sign = exp < 0 ? '-' : '+';
    return `${digits}e${sign}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  return x
    .toFixed(Math.max(0, 3 - exp))
    .replace(/(\.\d*?)0+$/, '$1')
    .replace(/\.$/, '');
}

/** A swept value or a metric as the table shows it (as the cell's table has them). */
export function shownValue(
  value: number | string | boolean | null | undefined
): string {
  if (typeof value === 'number') {
    return Number.isInteger(value) ? String(value) : g4(value);
  }
  return value === undefined || value === null ? '' : String(value);
}

/**
 * A sweep's tab: its summary, parallel coordinates of its trials and each variable's
 * importance, the plot (its metric by trial and against each swept variable)
 * and the table of trials (values, state, metric, time, job), the best one in bold; a trial's
 * job opens from its row. Read again while a trial runs.
 */
export function SweepView(props: {
  sweepId: string;
  onOpenJob: (jobId: string) => void;
}): JSX.Element {
  const [sweep, setSweep] = useState<ISweep | null>(null);
  const [error, setError] = useState<string | null>(null);
  usePoll(
    async () => {
      try {
        const read = await getSweep(props.sweepId);
        setSweep(read);
        setError(null);
        return read.trials.some(t => t.state === 'running');
      } catch (e) {
        setError(e instanceof Error ? e.message : String(e));
        return true;
      }
    },
    SWEEP_POLL_MS,
    [props.sweepId]
  );
  const svg = sweep?.svg ?? null;
  const src = useMemo(() => (svg ? svgDataUrl(svg) : null), [svg]);
  if (!sweep) {
    return (
      <div className="tfc-SweepView" data-sweep={props.sweepId}>
        {error ? (
          <div className="tfc-Error">{error}</div>
        ) : (
          'Loading the sweep...'
        )}
      </div>
    );
  }
  const goal = sweep.goal === 'max' ? 'highest' : 'lowest';
  return (
    <div className="tfc-SweepView" data-sweep={sweep.id}>
      <h2 className="tfc-SweepView-title">Sweep {sweep.name}</h2>
      <div className="tfc-SweepView-summary">{sweep.summary}</div>
      <div className="tfc-Muted">
        Trials are ranked by the {goal} {sweep.metric}.
      </div>
      {error ? <div className="tfc-Error">{error}</div> : null}
      {sweep.trials.length ? <ParallelView sweep={sweep} /> : null}
      <ImportanceView sweep={sweep} />
      {src ? (
        <img
          className="tfc-SweepView-plot"
          src={src}
          alt={`${sweep.metric} by trial and by ${sweep.names.join(', ')}`}
        />
      ) : null}
      <table className="tfc-SweepView-table">
        <thead>
          <tr>
            <th>#</th>
            {sweep.names.map(name => (
              <th key={name}>{name}</th>
            ))}
            <th>state</th>
            <th>{sweep.metric}</th>
            <th>time</th>
            <th>job</th>
          </tr>
        </thead>
        <tbody>
          {sweep.trials.map(trial => (
            <tr
              key={trial.number}
              data-trial={trial.number}
              className={
                trial.number === sweep.best ? 'tfc-SweepView-best' : undefined
              }
              title={trial.note || undefined}
            >
              <td>{trial.number}</td>
              {sweep.names.map(name => (
                <td key={name}>{shownValue(trial.values[name])}</td>
              ))}
              <td>
                {trial.state}
                {trial.number === sweep.best ? ' (best)' : ''}
              </td>
              <td>{shownValue(trial.metric)}</td>
              <td>
                {trial.seconds === null ? '' : formatElapsed(trial.seconds)}
              </td>
              <td>
                {trial.job_id ? (
                  <button
                    className="tfc-LinkButton tfc-SweepView-job"
                    onClick={() => props.onOpenJob(trial.job_id as string)}
                    title={`open job ${trial.job_id}`}
                  >
                    {trial.job_id.slice(-6)}
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
