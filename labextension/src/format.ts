/**
 * Small formatting helpers for job rows and details.
 */
import { IJob } from './types';

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

/** The cost so far: dollars on Vertex AI; on this machine, free (with the Vertex rate). */
export function formatCost(job: IJob): string {
  if (job.billed) {
    return `$${job.cost_estimate.toFixed(2)}`;
  }
  return '$0.00 local';
}

/** The hover text of the cost. */
export function costTitle(job: IJob): string {
  const rate = `$${job.cost_per_hour.toFixed(2)}/h`;
  return job.billed
    ? `estimated from list prices: ${rate} x elapsed time`
    : `runs on this machine; the same machines on Vertex AI: about ${rate}`;
}

/** When the job was created, as local time. */
export function formatCreated(job: IJob): string {
  return new Date(job.created_at * 1000).toLocaleString();
}
