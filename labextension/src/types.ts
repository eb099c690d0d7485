/**
 * The jobs API's JSON shapes (see tfc_jupyter/server/openapi.yaml).
 */

import type { components } from './openapi';

/** A sweep read back from its trial jobs (`GET /sweeps/{id}`), as the OpenAPI file says. */
export type ISweep = components['schemas']['Sweep'];

/** The code a job ran (`GET /jobs/{id}/code`): its notebook and code cells, as launched. */
export type ICode = components['schemas']['Code'];

/** A job state; the values mirror Vertex AI's job states. */
export type JobState =
  | 'queued'
  | 'pending'
  | 'running'
  | 'succeeded'
  | 'failed'
  | 'cancelling'
  | 'cancelled';

/**
 * Where a job runs: a built-in backend (`local`, `docker`, `vertex`) or one an installed package
 * adds; `GET /api/status` lists them. Any name: the sidebar asks a backend's traits, never its
 * name.
 */
export type Backend = string;

/** One job record, with elapsed time and cost estimate. */
export interface IJob {
  id: string;
  name: string;
  backend: Backend;
  state: JobState;
  terminal: boolean;
  notebook: string | null;
  /** The nbformat id of the notebook cell that launched the job, when known. */
  cell_id: string | null;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
  elapsed: number;
  replica_count: number;
  /** Replicas with a log so far, chief first. */
  replicas: string[];
  /** null: a machine of the job has no verified list price */
  cost_per_hour: number | null;
  cost_estimate: number | null;
  billed: boolean;
  error: string | null;
  error_location: string | null;
  console_url: string | null;
  tensorboard_url: string | null;
  /**
   * What the kernel that followed the job set when it ended (`Back in the kernel: model.`), else
   * null (no kernel brought it back: `%tfc_attach JOB` does).
   */
  returned: string | null;
  /** The kernel that set them, `ID/PID` (its id and process). */
  returned_kernel: string | null;
  /** The kernel that set them restarted or shut down since: they are gone from it. */
  returned_gone: boolean;
  job_dir: string;
  spec: {
    resolved_strategy?: string;
    worker_count?: number;
    [key: string]: unknown;
  };
  /** The chief's metrics at its last epoch (`{"loss": 0.03, ...}`); null before one ends. */
  last_metrics: { [name: string]: MetricValue } | null;
  /** Metrics that became NaN or infinite, and where (`loss is NaN from epoch 3`). */
  metric_flags: string[];
  /** How many times its replicas were restarted after one died. */
  restarts: number;
}

/** A metric's value: a number, or NaN and infinity as JSON can carry them (strings). */
export type MetricValue = number | 'NaN' | 'Infinity' | '-Infinity';

/** One epoch's metrics as the chief recorded them (`fit`: which `fit` call, from 0). */
export interface IEpochMetrics {
  fit: number;
  epoch: number;
  /** When the epoch ended (POSIX seconds); null when the job did not say. */
  time: number | null;
  metrics: { [name: string]: MetricValue };
}

/** GET jobs/{id}/metrics: the chief's per-epoch metrics, and a plot of them (SVG). */
export interface IMetrics {
  job_id: string;
  state: JobState;
  terminal: boolean;
  names: string[];
  epochs: IEpochMetrics[];
  last: { [name: string]: MetricValue } | null;
  /** Metrics that became NaN or infinite, and where (`loss is NaN from epoch 3`). */
  flags: string[];
  model_dir: string | null;
  /** A standalone SVG image of the curves, drawn by the server; null before the first epoch. */
  svg: string | null;
}

/** A piece of one replica's log. */
export interface ILogChunk {
  job_id: string;
  replica: string;
  replicas: string[];
  offset: number;
  next_offset: number;
  size: number;
  more: boolean;
  text: string;
  /** The latest state of the line being written (a progress bar): shown after `text`. */
  partial: string;
  state: JobState;
  terminal: boolean;
}

/** One catalog machine. */
export interface IMachine {
  name: string;
  machine_type: string;
  accelerator_type: string | null;
  accelerator_count: number;
  /** null: no verified list price */
  price_per_hour: number | null;
  tpu_topology: string | null;
  description: string;
}

/** GET /machines. */
export interface IMachines {
  machines: IMachine[];
  gpu_types: string[];
  tpu_types: string[];
  prices_as_of: string;
  pricing_url: string;
}

/** One field of the launch form (and the panel), from the option table. */
export interface IFormField {
  /** The option (its key in the job options). */
  name: string;
  label: string;
  /** Its section. */
  group: string;
  /** Its value: a whole number, text, a list of texts, or true/false. */
  kind: 'count' | 'text' | 'list' | 'switch';
  /** Its control; `suggest`: a list to pick from, or any text. */
  control: 'choice' | 'suggest' | 'count' | 'text' | 'list' | 'switch';
  help: string;
  placeholder: string;
  /** A list's items are split on it (a space: on commas and spaces too). */
  separator: string;
  neutral: string | null;
  /** The option's default as the field shows it (`1`, `bayes`; empty: none). */
  default: string;
  /** The values offered, with their labels (a choice or a suggestion). */
  choices: { value: string | number; label: string }[] | null;
  /** Fields that must be set for this one to be sent (a GPU type needs GPUs). */
  only_with: string[];
  /** Fields that must not be set for this one to be sent (a TPU host has no GPUs). */
  only_without: string[];
  /** An optional count: its empty box is unset, sent as "" (not 0), shown empty. */
  optional: boolean;
}

/** GET /defaults. */
export interface IDefaults {
  version: string;
  settings: { [key: string]: { value: unknown; source: string } };
  backends: string[];
  strategies: string[];
  options: { name: string; flag: string; help: string }[];
  /** The form's fields, by section (the panel shows the same). */
  fields: IFormField[];
}

/** The options of a job: the %%tfc_run flags by name ("" for a text option: its default). */
export interface IJobOptions {
  backend?: string;
  machine?: string;
  workers?: number;
  gpus?: number;
  gpu_type?: string;
  tpu?: string;
  strategy?: string;
  region?: string;
  project?: string;
  name?: string;
  label?: string[];
  args?: string;
  dry_run?: boolean;
}

/** A fix as data (an option to drop or to set), said in flags (`text`) and in the UI's words. */
export type IFix = components['schemas']['Fix'];

/** Why launching would fail; `ui_message`/`ui_hint` say it in the UI's words (not flags). */
export interface IRefusal {
  message: string;
  hint: string;
  field: string | null;
  ui_message: string;
  ui_hint: string;
  /** The fix as data, when the server gives it so (the form applies one with a click). */
  fixes: IFix[];
}

/** The plan summary of a dry run or a launch. */
export interface IPlan {
  notebook: string | null;
  found_by: string;
  /** Where the code came from, in the user's words (`found_by` is the API's label). */
  source: string;
  cells: number[];
  skipped_cells: number[];
  strategy: string;
  cost_per_hour: number | null;
  /** The cost in the backend's words (`cost: nothing billed (it runs on this machine)`). */
  cost_text: string;
  requirements: string[];
  warnings: string[];
  notes: string[];
  spec: {
    backend: string;
    worker_count: number;
    chief: IMachine;
    [key: string]: unknown;
  };
  /** The job's options (the cell's flags with the request's over them), and its line. */
  options: { [key: string]: unknown };
  line: string;
  /** What launching it would say (the backend's verdict), null when it would start. */
  refused: IRefusal | null;
}

/** POST /jobs. */
export interface ICreateJob {
  /** The notebook's (.ipynb) or script's (.py) path under the server root. */
  path: string;
  /** A script's text as the editor has it (omitted: the saved file); scripts only. */
  source?: string;
  /** The notebook's JSON as the editor has it (omitted: the saved file); notebooks only. */
  notebook?: { [key: string]: unknown };
  dirty?: boolean;
  /** The 1-based position of the `%%tfc_run` cell; notebooks only. */
  cell?: number;
  options: IJobOptions;
  /** The options replace the cell's own values (lists too): a form that sends them all. */
  replace?: boolean;
}

/** POST /jobs answers. */
export interface ICreated {
  job?: IJob;
  plan: IPlan;
  dry_run?: true;
  text?: string;
  /** A dry run: that it would run as a sweep (else null); a sweep started (202): its id. */
  sweep?: string | null;
  trials?: number;
  parallel?: number;
  /** `sweeps/ID`: the sweep's tab follows it there. */
  path?: string;
  driver?: { pid: number; log: string };
}
