/**
 * Small formatting helpers for job rows and details.
 */
import { IJob, MetricValue } from './types';

/** `42 s`, `3 min 05 s`, `2 h 07 min`. */
export function formatElapsed(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  }
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** What the catalog says of a machine without a verified list price. */
export const NOT_LISTED = 'price not listed';

/** `$1.23/h`, or "price not listed" (the server sends null for such machines). */
export function formatRate(rate: number | null): string {
  return rate === null ? NOT_LISTED : `$${rate.toFixed(2)}/h`;
}

/** The cost so far: dollars on Vertex AI; on this machine, free (with the Vertex rate). */
export function formatCost(job: IJob): string {
  if (job.billed) {
    return job.cost_estimate === null
      ? NOT_LISTED
      : `$${job.cost_estimate.toFixed(2)}`;
  }
  return '$0.00 local';
}

/** The hover text of the cost. */
export function costTitle(job: IJob): string {
  const rate = formatRate(job.cost_per_hour);
  if (job.cost_per_hour === null) {
    return job.billed
      ? 'a machine of this job has no verified list price: see Vertex AI pricing'
      : `runs on this machine; the same machines on Vertex AI: ${rate}`;
  }
  return job.billed
    ? `estimated from list prices: ${rate} x elapsed time`
    : `runs on this machine; the same machines on Vertex AI: about ${rate}`;
}

/** When the job was created, as local time. */
export function formatCreated(job: IJob): string {
  return new Date(job.created_at * 1000).toLocaleString();
}

const MONTHS = [
  'Jan',
  'Feb',
  'Mar',
  'Apr',
  'May',
  'Jun',
  'Jul',
  'Aug',
  'Sep',
  'Oct',
  'Nov',
  'Dec'
];

/**
 * When the job started, short, as local time: `14:02` today, `Nov 23 14:02` another day of this
 * year, `Nov 23 2025 14:02` before.
 */
export function formatStart(job: IJob, now: Date = new Date()): string {
  const when = new Date(job.created_at * 1000);
  const pad = (n: number): string => String(n).padStart(2, '0');
  const time = `${pad(when.getHours())}:${pad(when.getMinutes())}`;
  if (when.toDateString() === now.toDateString()) {
    return time;
  }
  const day = `${MONTHS[when.getMonth()]} ${when.getDate()}`;
  return when.getFullYear() === now.getFullYear()
    ? `${day} ${time}`
    : `${day} ${when.getFullYear()} ${time}`;
}

/** The file name of a path (`/home/me/train.ipynb` -> `train.ipynb`). */
export function basename(path: string): string {
  return path.split(/[\\/]/).pop() || path;
}

/** The short id shown in titles: the id's last 6 characters (`%tfc_attach` accepts it). */
export function shortId(id: string): string {
  return id.slice(-6);
}

/** A job's tab title: its name and short id (`quickstart · a1b2c3`). */
export function jobTitle(job: IJob): string {
  return `${job.name} · ${shortId(job.id)}`;
}

/**
 * A metric value, short: 3 significant digits (`0.035`, `12.3`, `1.5e-5`); `NaN`, `inf` and
 * `-inf` as such (the API sends them as strings).
 */
export function formatMetric(value: MetricValue): string {
  if (typeof value === 'string' || !Number.isFinite(value)) {
    const text = String(value);
    return text === 'Infinity' ? 'inf' : text === '-Infinity' ? '-inf' : text;
  }
  const size = Math.abs(value);
  if (size !== 0 && (size < 1e-3 || size >= 1e5)) {
    return value.toExponential(1);
  }
  return String(Number(value.toPrecision(3)));
}

/**
 * The loss among a job's metrics (tfc_jupyter/returns/results.py, `loss_name`): `loss`, else a training
 * loss of a custom loop (`train_loss`), else any loss; undefined when none is.
 */
export function lossName(names: string[]): string | undefined {
  const losses = names.filter(n => n.endsWith('loss')).sort();
  const held = /^(val|test|eval|valid|validation)_/;
  return names.includes('loss')
    ? 'loss'
    : (losses.find(n => !held.test(n)) ?? losses[0]);
}

/** The metric the sidebar shows: the loss, else the first one; null when there is none. */
export function headlineMetric(
  metrics: { [name: string]: MetricValue } | null | undefined
): string | null {
  if (!metrics) {
    return null;
  }
  const name = lossName(Object.keys(metrics)) ?? Object.keys(metrics).sort()[0];
  return name === undefined ? null : `${name} ${formatMetric(metrics[name])}`;
}

/** Every metric, `loss 0.035 · accuracy 0.98`, the loss first. */
export function formatMetrics(metrics: {
  [name: string]: MetricValue;
}): string {
  const names = Object.keys(metrics).sort((a, b) =>
    a === 'loss' ? -1 : b === 'loss' ? 1 : a.localeCompare(b)
  );
  return names
    .map(name => `${name} ${formatMetric(metrics[name])}`)
    .join(' · ');
}

/** What a job is matched on by the sidebar's filter: name, id, notebook, state, backend. */
export function matchesFilter(job: IJob, filter: string): boolean {
  const text = [job.name, job.id, job.notebook ?? '', job.state, job.backend]
    .join(' ')
    .toLowerCase();
  return filter
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every(word => text.includes(word));
}

/** The replica names a job's error can start with: `chief`, `worker-0`, `ps-1`, `evaluator`. */
const REPLICA = /^(chief|evaluator|(?:worker|ps)-\d+)\b/;

/**
 * The replica whose failure a job's error names ("worker-0 exited with status 1 at ..."), when
 * the job failed and that replica has a log; null otherwise (the view opens on the chief).
 */
export function failedReplica(
  job: Pick<IJob, 'state' | 'error' | 'replicas'>
): string | null {
  if (job.state !== 'failed' || !job.error) {
    return null;
  }
  const named = REPLICA.exec(job.error.trim())?.[1];
  if (named && job.replicas.includes(named)) {
    return named;
  }
  // "... on worker-1: ...", "the evaluator ...": the first replica the error names
  return (
    job.replicas.find(name =>
      new RegExp(`(^|[^\\w-])${name}([^\\w-]|$)`).test(job.error ?? '')
    ) ?? null
  );
}

/**
 * The path of `file` (absolute, on the server) under the server's root folder `root`, as
 * JupyterLab opens it (`dir/nb.ipynb`); null when it is not under it.
 */
export function pathUnderRoot(file: string, root: string): string | null {
  const norm = (path: string): string => path.replace(/\\/g, '/');
  const path = norm(file);
  const base = norm(root).replace(/\/+$/, '');
  let rest: string;
  if (norm(root).startsWith('/') && !base) {
    rest = path.startsWith('/') ? path.replace(/^\/+/, '') : ''; // the root is / itself
  } else if (!base || base.startsWith('~') || !path.startsWith(`${base}/`)) {
    return null;
  } else {
    rest = path.slice(base.length + 1);
  }
  return rest && !rest.split('/').includes('..') ? rest : null;
}

/**
 * The text of the line a job failed at, from a replica's log: the line after the traceback
 * frame the runtime marks with its location (`  File ".../script.py", line 12, in <module>
 * [cell 3, line 3]`), the innermost such frame; "" when the log holds none.
 */
export function codeAt(log: string, location: string): string {
  const lines = log.split('\n');
  const marker = `[${location}]`;
  for (let i = lines.length - 2; i >= 0; i--) {
    if (lines[i].trimEnd().endsWith(marker) && /^\s*File "/.test(lines[i])) {
      return lines[i + 1].trim();
    }
  }
  return '';
}

/**
 * One job's end in a sentence, for a notification: `quickstart · a1b2c3 succeeded after 2 min
 * 05 s (loss 0.043)`, `... failed after 12 s: worker-0 exited with status 1 ...`.
 */
export function endedText(job: IJob): string {
  const head = `${jobTitle(job)} ${job.state} after ${formatElapsed(job.elapsed)}`;
  if (job.state === 'failed' && job.error) {
    return `${head}: ${job.error.split('\n')[0]}`;
  }
  const flags = job.metric_flags ?? [];
  if (flags.length) {
    return `${head}; ${flags.join('; ')}`;
  }
  const metrics = job.last_metrics ?? {};
  const name = lossName(Object.keys(metrics));
  return name === undefined
    ? head
    : `${head} (${name} ${formatMetric(metrics[name])})`;
}
