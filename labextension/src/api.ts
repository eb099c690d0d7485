/**
 * Typed calls of the jobs API, one per endpoint.
 */
import { requestAPI } from './request';
import {
  ICode,
  ICreateJob,
  ICreated,
  IDefaults,
  IJob,
  ILogChunk,
  IMachines,
  IMetrics,
  ISweep
} from './types';

/** Recent jobs, newest first (launched here or by kernels). */
export async function listJobs(limit = 50): Promise<IJob[]> {
  const data = await requestAPI<{ jobs: IJob[] }>(`jobs?limit=${limit}`);
  return data.jobs;
}

/** One job. */
export function getJob(id: string): Promise<IJob> {
  return requestAPI<IJob>(`jobs/${encodeURIComponent(id)}`);
}

/** Launch (or, with options.dry_run, plan) a job. */
export function createJob(body: ICreateJob): Promise<ICreated> {
  return requestAPI<ICreated>('jobs', {
    method: 'POST',
    body: JSON.stringify(body)
  });
}

/** A replica's log from a byte offset (`quiet`: without TensorFlow's start-up chatter). */
export function readLogs(
  id: string,
  replica: string,
  offset: number,
  quiet = false,
  limit?: number
): Promise<ILogChunk> {
  const query = new URLSearchParams({ replica, offset: String(offset) });
  if (quiet) {
    query.set('quiet', '1');
  }
  if (limit !== undefined) {
    query.set('limit', String(limit));
  }
  return requestAPI<ILogChunk>(`jobs/${encodeURIComponent(id)}/logs?${query}`);
}

/** The chief's per-epoch metrics and their plot (SVG); `runCell`: only the fits its run cell made. */
export function getMetrics(id: string, runCell = false): Promise<IMetrics> {
  const only = runCell ? '?run_cell=1' : '';
  return requestAPI<IMetrics>(`jobs/${encodeURIComponent(id)}/metrics${only}`);
}

/** The code a job ran: its notebook's path and code cells, as launched. */
export function getCode(id: string): Promise<ICode> {
  return requestAPI<ICode>(`jobs/${encodeURIComponent(id)}/code`);
}

/** A sweep's trials, the best one and the plot, read back from its trial jobs. */
export function getSweep(id: string): Promise<ISweep> {
  return requestAPI<ISweep>(`sweeps/${encodeURIComponent(id)}`);
}

/** Cancel a job. */
export function cancelJob(id: string): Promise<IJob> {
  return requestAPI<IJob>(`jobs/${encodeURIComponent(id)}/cancel`, {
    method: 'POST'
  });
}

/** TensorBoard on a job's logs on the server's machine (started on loopback): its address. */
export async function openTensorBoard(id: string): Promise<string> {
  const data = await requestAPI<{ url: string }>(
    `jobs/${encodeURIComponent(id)}/tensorboard`,
    { method: 'POST' }
  );
  return data.url;
}

/** Remove an ended job from the list (`files`: its folder on the server's machine too). */
export function deleteJob(id: string, files = false): Promise<IJob> {
  const query = files ? '?files=1' : '';
  return requestAPI<IJob>(`jobs/${encodeURIComponent(id)}${query}`, {
    method: 'DELETE'
  });
}

/** Remove every ended job from the list; the ids removed. */
export async function clearFinished(files = false): Promise<string[]> {
  const data = await requestAPI<{ deleted: string[] }>(
    `jobs${files ? '?files=1' : ''}`,
    { method: 'DELETE' }
  );
  return data.deleted;
}

/** The machine catalog. */
export function getMachines(): Promise<IMachines> {
  return requestAPI<IMachines>('machines');
}

/** The effective defaults and the options a job takes. */
export function getDefaults(): Promise<IDefaults> {
  return requestAPI<IDefaults>('defaults');
}
