/**
 * Comparing runs: several jobs' curves of one metric overlaid, and the options they differ in.
 */
import { lossName, shortId } from './format';
import { ICode, IEpochMetrics, IJob, IMetrics, MetricValue } from './types';

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

/** A value as flags write it: a list space-separated, a mapping (labels) as `k=v, k=v`. */
export function shown(value: unknown): string {
  if (value === null || value === undefined || value === '') {
    return '—';
  }
  if (typeof value === 'string') {
    return value;
  }
  if (Array.isArray(value)) {
    const items = value.map(v => shown(v));
    return items.length ? items.join(' ') : '—';
  }
  if (typeof value === 'object') {
    const pairs = Object.entries(value as Record<string, unknown>).map(
      ([k, v]) => `${k}=${shown(v)}`
    );
    return pairs.length ? pairs.join(', ') : '—';
  }
  return String(value);
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

/** A notebook's path shown by its name, with its folder when two names are alike. */
function baseName(path: string): string {
  return path.split('/').pop() || path;
}

/** What the notebooks say: the same one, or each job's, first of all. */
export function notebookLine(jobs: IJob[]): { same: boolean; text: string } {
  const paths = jobs.map(j => j.notebook ?? '');
  const names = paths.map(p => (p ? baseName(p) : 'no notebook recorded'));
  const sameName = new Set(names).size === 1;
  if (new Set(paths).size === 1) {
    return { same: true, text: `Same notebook: ${paths[0] || names[0]}` };
  }
  const shownNames = sameName ? paths.map(p => p || names[0]) : names;
  const each = jobs.map((j, i) => `${shownNames[i]} (${j.name})`);
  return { same: false, text: `Different notebooks: ${each.join(' vs ')}` };
}

/** A job's code as lines: each cell under a `# cell N` line, else its script. */
export function codeLines(code: ICode): string[] {
  if (code.cells.length) {
    return code.cells.flatMap(c => [
      `# cell ${c.cell}`,
      ...c.source.replace(/\n$/, '').split('\n')
    ]);
  }
  return code.script ? code.script.replace(/\n$/, '').split('\n') : [];
}

/** One line of a diff: kept (' '), only in the first ('-') or only in the other ('+'). */
export interface IDiffLine {
  op: ' ' | '-' | '+';
  text: string;
}

/** The lines of `a` and `b` as a diff (longest common subsequence; 4000 lines each at most,
 * past that the rest is compared as a whole). */
export function diffLines(a: string[], b: string[]): IDiffLine[] {
  const n = Math.min(a.length, 4000);
  const m = Math.min(b.length, 4000);
  const lcs: number[][] = Array.from({ length: n + 1 }, () =>
    new Array<number>(m + 1).fill(0)
  );
  for (let i = n - 1; i >= 0; i--) {
    for (let k = m - 1; k >= 0; k--) {
      lcs[i][k] =
        a[i] === b[k]
          ? lcs[i + 1][k + 1] + 1
          : Math.max(lcs[i + 1][k], lcs[i][k + 1]);
    }
  }
  const out: IDiffLine[] = [];
  let i = 0;
  let k = 0;
  while (i < n && k < m) {
    if (a[i] === b[k]) {
      out.push({ op: ' ', text: a[i++] });
      k++;
    } else if (lcs[i + 1][k] >= lcs[i][k + 1]) {
      out.push({ op: '-', text: a[i++] });
    } else {
      out.push({ op: '+', text: b[k++] });
    }
  }
  a.slice(i).forEach(text => out.push({ op: '-', text }));
  b.slice(k).forEach(text => out.push({ op: '+', text }));
  return out;
}

/** The changed lines of a diff with `context` kept lines around each, gaps as `…`. */
export function diffHunks(
  diff: IDiffLine[],
  context = 2
): (IDiffLine | null)[] {
  const near = diff.map((_, i) =>
    diff
      .slice(Math.max(0, i - context), i + context + 1)
      .some(d => d.op !== ' ')
  );
  const out: (IDiffLine | null)[] = [];
  diff.forEach((d, i) => {
    if (near[i]) {
      out.push(d);
    } else if (out[out.length - 1] !== null) {
      out.push(null); // lines left out here (at the start too)
    }
  });
  return out.some(d => d !== null) ? out : [];
}
