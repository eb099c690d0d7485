/**
 * A job record as GET /jobs gives it, for the tests: a finished local job unless told.
 */
import { IJob } from '../types';

/** A job; `overrides` changes some members. */
export function makeJob(overrides: Partial<IJob> = {}): IJob {
  return {
    id: 'job-20261127-140000-a1b2c3',
    name: 'job',
    backend: 'local',
    state: 'succeeded',
    terminal: true,
    notebook: 'nb.ipynb',
    cell_id: null,
    created_at: 1795000000,
    started_at: 1795000000,
    ended_at: 1795000001,
    elapsed: 1,
    replica_count: 1,
    replicas: ['chief'],
    cost_per_hour: null,
    cost_estimate: 0,
    billed: false,
    error: null,
    error_location: null,
    console_url: null,
    tensorboard_url: null,
    returned: null,
    returned_kernel: null,
    returned_gone: false,
    job_dir: '/tmp/x',
    spec: {},
    last_metrics: null,
    metric_flags: [],
    restarts: 0,
    ...overrides
  };
}
