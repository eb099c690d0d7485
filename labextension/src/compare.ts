/**
 * Comparing runs: several jobs' curves of one metric overlaid, and the options they differ in.
 */
import { lossName, shortId } from './format';
import { IEpochMetrics, IJob, IMetrics, MetricValue } from './types';

/** One job's curve: its epochs in order (1, 2, ...), null where the value is not a number. */
export interface ISeries {
  jobId: string;
  label: string;
  values: (number | null)[];
}

/** Curve colours, each 3:1 against white and #212121 (as the server's plot). */
export const SERIES_COLORS = [
  '#1f77b4',
  '#d46b08',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#b0705f',
  '#c75aa3'
];

function finite(value: MetricValue | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** The metrics every job reported, the loss first: what can be compared. */
export function sharedMetrics(runs: IMetrics[]): string[] {
  if (!runs.length) {
    return [];
  }
  const shared = runs
    .map(r => new Set(r.names))
    .reduce((a, b) => new Set([...a].filter(n => b.has(n))));
  const names = [...shared].sort();
  const loss = lossName(names);
  return loss ? [loss, ...names.filter(n => n !== loss)] : names;
}

/** Each job's curve of `name`, epoch by epoch across its fits. */
export function seriesOf(
  jobs: IJob[],
  runs: IMetrics[],
  name: string
): ISeries[] {
  return jobs.map((job, i) => ({
    jobId: job.id,
    label: `${job.name} · ${shortId(job.id)}`,
    values: (runs[i]?.epochs ?? []).map((e: IEpochMetrics) =>
      finite(e.metrics[name])
    )
  }));
}

/** The polylines of the series in a `width` x `height` box: runs of finite points. */
export function polylines(
  series: ISeries[],
  width: number,
  height: number
): { jobId: string; runs: string[] }[] {
  const all = series.flatMap(s =>
    s.values.filter((v): v is number => v !== null)
  );
  const longest = Math.max(1, ...series.map(s => s.values.length));
  let low = all.length ? Math.min(...all) : 0;
  let high = all.length ? Math.max(...all) : 1;
  if (high - low < 1e-12) {
    low -= 0.5;
    high += 0.5;
  }
  const x = (i: number): number =>
    longest > 1 ? (width * i) / (longest - 1) : width / 2;
  const y = (v: number): number => (height * (high - v)) / (high - low);
  return series.map(s => {
    const runs: string[][] = [[]];
    s.values.forEach((v, i) => {
      if (v === null) {
        if (runs[runs.length - 1].length) {
          runs.push([]);
        }
      } else {
        runs[runs.length - 1].push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`);
      }
    });
    return {
      jobId: s.jobId,
      runs: runs.filter(r => r.length).map(r => r.join(' '))
    };
  });
}

/** The extent of the values drawn (for the axis labels). */
export function extent(series: ISeries[]): [number, number] | null {
  const all = series.flatMap(s =>
    s.values.filter((v): v is number => v !== null)
  );
  return all.length ? [Math.min(...all), Math.max(...all)] : null;
}

function shown(value: unknown): string {
  if (value === null || value === undefined || value === '') {
    return '—';
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Spec keys that say nothing about how a job was run differently. */
const NOT_OPTIONS = new Set(['name', 'decided', 'resolved_strategy']);

/** A job's spec with its Google Cloud part's settings among the others, as flags set them. */
function options(job: IJob): Record<string, unknown> {
  const { google, ...rest } = (job.spec ?? {}) as Record<string, unknown>;
  return { ...rest, ...((google as Record<string, unknown>) ?? {}) };
}

/** The options (spec values) the jobs differ in, each with every job's value, by name. */
export function differingOptions(
  jobs: IJob[]
): { name: string; values: string[] }[] {
  const specs = jobs.map(options);
  const keys = new Set(specs.flatMap(s => Object.keys(s)));
  keys.add('backend');
  const rows: { name: string; values: string[] }[] = [];
  for (const key of [...keys].sort()) {
    if (NOT_OPTIONS.has(key)) {
      continue;
    }
    const values = jobs.map((j, k) =>
      shown(key === 'backend' ? j.backend : specs[k][key])
    );
    if (new Set(values).size > 1) {
      rows.push({ name: key, values });
    }
  }
  return rows;
}
