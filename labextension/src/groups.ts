import { IJob } from './types';

/** The label every trial of a sweep carries (its value: the sweep's id), and its number. */
export const SWEEP_LABEL = 'tfc-sweep';
export const TRIAL_LABEL = 'tfc-trial';

/** One row of the list: a job alone, or a sweep with its trials under it. */
export interface IJobGroup {
  /** A job's id, or `sweep:<id>` for a sweep. */
  key: string;
  /** The sweep's id; null for a job alone. */
  sweep: string | null;
  /** The job alone, or the sweep's trials by their number. */
  jobs: IJob[];
  /** Some job of the group has not ended. */
  running: boolean;
}

/**
 * A label's value in a job's spec, or null: `labels` is an object (`{"k": "v"}`, as the jobs
 * API sends a record's spec), or pairs (`[["k", "v"], ...]`, as older records may hold them).
 */
export function labelOf(job: IJob, key: string): string | null {
  const labels: unknown = job.spec?.labels;
  if (Array.isArray(labels)) {
    for (const pair of labels) {
      if (
        Array.isArray(pair) &&
        pair[0] === key &&
        typeof pair[1] === 'string'
      ) {
        return pair[1];
      }
    }
    return null;
  }
  if (labels !== null && typeof labels === 'object') {
    const value = (labels as Record<string, unknown>)[key];
    return typeof value === 'string' ? value : null;
  }
  return null;
}

/** A sweep trial's number (its label), or null for a job that is no trial. */
export function trialOf(job: IJob): number | null {
  const label = labelOf(job, TRIAL_LABEL);
  const n = label === null || label === '' ? NaN : Number(label);
  return Number.isInteger(n) ? n : null;
}

function trialNumber(job: IJob): number {
  return trialOf(job) ?? Number.MAX_SAFE_INTEGER;
}

/**
 * The list's rows, in the order of `jobs` (newest first): a sweep's trials become one row
 * where its newest trial is, its trials under it by number.
 */
export function groupJobs(jobs: IJob[]): IJobGroup[] {
  const out: IJobGroup[] = [];
  const sweeps = new Map<string, IJobGroup>();
  for (const job of jobs) {
    const sweep = labelOf(job, SWEEP_LABEL);
    if (sweep === null) {
      out.push({
        key: job.id,
        sweep: null,
        jobs: [job],
        running: !job.terminal
      });
      continue;
    }
    let group = sweeps.get(sweep);
    if (!group) {
      group = { key: `sweep:${sweep}`, sweep, jobs: [], running: false };
      sweeps.set(sweep, group);
      out.push(group);
    }
    group.jobs.push(job);
    group.running = group.running || !job.terminal;
  }
  for (const group of sweeps.values()) {
    group.jobs.sort((a, b) => trialNumber(a) - trialNumber(b));
  }
  return out;
}

/** The rows split into those with a job still going and those that have all ended. */
export function sections(groups: IJobGroup[]): {
  running: IJobGroup[];
  finished: IJobGroup[];
} {
  return {
    running: groups.filter(g => g.running),
    finished: groups.filter(g => !g.running)
  };
}

/**
 * A sweep row's words: its name (the trials' name without `-trial-N`) and how far it is; a
 * sweep run as one tuning job (labelled with its sweep and no trial number) says that job's state.
 */
export function sweepSummary(group: IJobGroup): { name: string; text: string } {
  const first = group.jobs[0];
  const name = first
    ? first.name.replace(/-trial-\d+$/, '')
    : (group.sweep ?? 'sweep');
  const counts = new Map<string, number>();
  for (const job of group.jobs) {
    counts.set(job.state, (counts.get(job.state) ?? 0) + 1);
  }
  const parts = [...counts.entries()]
    .sort((a, b) => a[0].localeCompare(b[0]))
    .map(([state, n]) => `${n} ${state}`);
  if (group.jobs.length === 1 && labelOf(first, TRIAL_LABEL) === null) {
    // a sweep its backend runs as one job (Vertex AI's tuning job): its trials are the
    // service's, shown in the sweep's tab
    return { name, text: `one tuning job: ${first.state}` };
  }
  const trials = group.jobs.length === 1 ? 'trial' : 'trials';
  return { name, text: `${group.jobs.length} ${trials}: ${parts.join(', ')}` };
}
