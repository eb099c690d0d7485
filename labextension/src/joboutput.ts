/**
 * The run cell stays with its job. When `%%tfc_run` launches a job, the cell shows one output of
 * MIME type `MIME_TYPE` (tfc_jupyter/returns/cell.py, `job_output`): the job's id. This renders it as the
 * job's state and elapsed time, polled from the jobs API until the job has ended, on a page
 * loaded later too (outputs are saved with the notebook). While the cell runs in this page the
 * kernel streams the job's lines into the cell; once it no longer does (the kernel restarted, the
 * page reloaded, the notebook closed and opened again) the output shows the job's latest lines
 * from its log, and how to bring the cell's names back into a new kernel.
 *
 * A notebook opened again after a job was launched from one of its cells and the notebook was
 * not saved since shows what the file holds: the cell's outputs of an earlier run, another job's.
 * `restorable` finds such cells (by the cell id the job's record keeps) and the plugin replaces
 * their outputs with the output of the job they launched last.
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMime } from '@jupyterlab/rendermime';
import { JSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

import { getJob, getMetrics, readLogs } from './api';
import { formatElapsed, pathUnderRoot, shortId } from './format';
import { TfcApiError } from './request';
import { IJob } from './types';

/** The MIME type of a run cell's job output (tfc_jupyter/returns/cell.py, `JOB_MIME`). */
export const MIME_TYPE = 'application/vnd.tfc-jupyter.job+json';
const VERSION = 1;

/** How often a job that has not ended is asked for (as the sidebar does). */
export const POLL_MS = 2000;
/** The longest wait between two asks after failures (the wait doubles at each one). */
export const MAX_BACKOFF_MS = 30_000;
/** The longest an output follows a job (every wait has a deadline). */
export const DEADLINE_MS = 7 * 24 * 3600 * 1000;
/** The longest one request may take before it counts as failed. */
export const REQUEST_MS = 15_000;
/** How many of the job's latest lines are shown once the kernel no longer streams them. */
export const TAIL_LINES = 12;
/** How much of the end of the log those lines are read from. */
const TAIL_BYTES = 16 * 1024;

/** The job an output follows, as the kernel (or `restorable`) wrote it. */
export interface IJobRef {
  id: string;
  /** Put there when the notebook was opened again: the kernel's lines are not in the cell. */
  restored: boolean;
}

function isObject(value: unknown): value is JSONObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The job of a bundle this version understands, else null. */
export function jobRefOf(data: unknown): IJobRef | null {
  if (!isObject(data) || data.version !== VERSION) {
    return null;
  }
  const { id, restored } = data;
  if (typeof id !== 'string' || !id) {
    return null;
  }
  return { id, restored: restored === true };
}

/** The output that follows job `id` in its cell (what `restorable`'s cells are given). */
export function jobOutput(id: string): JSONObject {
  return {
    output_type: 'display_data',
    data: {
      'text/plain': `Job ${id}: after a kernel restart, %tfc_attach ${id} follows it again.`,
      [MIME_TYPE]: { version: VERSION, id, restored: true }
    },
    metadata: {}
  };
}

const STATE_WORDS: { [state: string]: string } = {
  queued: 'queued',
  pending: 'waiting for its machines',
  running: 'running',
  cancelling: 'stopping',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled'
};

/** "running for 12 s", "succeeded after 3 min 05 s". */
export function stateText(
  job: Pick<IJob, 'state' | 'elapsed' | 'terminal'>
): string {
  const words = STATE_WORDS[job.state] ?? job.state;
  const elapsed = formatElapsed(job.elapsed);
  if (job.terminal) {
    return `${words} after ${elapsed}`;
  }
  return job.state === 'running'
    ? `running for ${elapsed}`
    : `${words} (${elapsed})`;
}

/** How to bring the cell's names back into a kernel started since. */
export function attachHint(id: string): string {
  return (
    `If the kernel was restarted, run %tfc_attach ${id} in a cell: it follows the job ` +
    "there and, once it ends well, brings the cell's names back into the kernel."
  );
}

/** Said where the kernel that set a job's names restarted or shut down since: they are gone. */
export function restartedHint(id: string): string {
  return (
    "The kernel restarted since this job's names came back into it: run %tfc_attach " +
    `${id} in a cell to bring them back.`
  );
}

/** Why the latest lines come from the job's log. */
export const DETACHED_NOTE =
  "This page no longer receives the cell's output; the job's latest lines, from its log:";

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07/g;

/**
 * The last `count` lines of a piece of log as a terminal shows them: colour codes left out, a
 * line redrawn with carriage returns at its last state, trailing empty lines dropped. With
 * `partial`, the first line is cut (the piece starts inside it) and left out.
 */
export function latestLines(
  text: string,
  count = TAIL_LINES,
  partial = false
): string[] {
  const lines = text.split('\n');
  if (partial) {
    lines.shift();
  }
  const shown = lines.map(line => {
    const parts = line.replace(ANSI, '').split('\r');
    const last = [...parts].reverse().find(part => part.trim() !== '');
    return (last ?? '').trimEnd();
  });
  while (shown.length && !shown[shown.length - 1]) {
    shown.pop();
  }
  return shown.slice(-count);
}

/** The latest lines of a job's first replica (the chief), without TensorFlow's start-up chatter. */
export async function latestLog(
  job: IJob,
  count = TAIL_LINES
): Promise<string[]> {
  const replica = job.replicas[0] ?? 'chief';
  const head = await readLogs(job.id, replica, 0, true, 1);
  const offset = Math.max(0, head.size - TAIL_BYTES);
  const chunk = await readLogs(job.id, replica, offset, true, TAIL_BYTES);
  return latestLines(chunk.text, count, offset > 0);
}

/** What the output shows; `lines` null while the kernel streams them into the cell. */
export interface IJobView {
  id: string;
  job: IJob | null;
  lines: string[] | null;
  /** A problem reaching the job ("the Jupyter server did not answer"), else null. */
  problem: string | null;
  /** True once nothing more will change (the job ended, is unknown, or the deadline passed). */
  done: boolean;
  /** The job's curves (SVG), read once it ended while the kernel did not stream into the cell. */
  svg?: string | null;
}

/** What a watcher needs: the job, its latest lines, whether the kernel streams into the cell. */
export interface IWatchSource {
  job(id: string): Promise<IJob>;
  lines(job: IJob): Promise<string[]>;
  streaming(): boolean;
  /** The job's curves as an SVG image (null: none), shown once it has ended. */
  plot?(job: IJob): Promise<string | null>;
}

/** `promise`, or a rejection after `ms` (a request that hangs counts as failed). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer = 0;
  const late = new Promise<never>((_, reject) => {
    timer = window.setTimeout(
      () => reject(new Error(`no answer within ${ms / 1000} s`)),
      ms
    );
  });
  return Promise.race([promise, late]).finally(() =>
    window.clearTimeout(timer)
  );
}

/** The wait before the next ask, after `failures` failed ones in a row. */
export function nextDelay(failures: number): number {
  return failures ? Math.min(MAX_BACKOFF_MS, POLL_MS * 2 ** failures) : POLL_MS;
}

/**
 * Follows one job: asks for it every `POLL_MS` (backing off after failures, never past
 * `DEADLINE_MS`) until it has ended or the watcher is disposed, and calls `show` with each view.
 * The latest lines are read while the kernel does not stream them into the cell, and once more
 * when the job ends (the lines it ended with).
 */
export class JobWatcher {
  constructor(
    private readonly ref: IJobRef,
    private readonly source: IWatchSource,
    private readonly show: (view: IJobView) => void,
    private readonly now: () => number = Date.now
  ) {
    this._view = {
      id: ref.id,
      job: null,
      lines: null,
      problem: null,
      done: false
    };
  }

  get view(): IJobView {
    return this._view;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Start following (once). */
  start(): void {
    if (this._deadline === 0 && !this._disposed) {
      this._deadline = this.now() + DEADLINE_MS;
      void this._tick();
    }
  }

  /** Stop: no more asks, no more views. */
  dispose(): void {
    this._disposed = true;
    window.clearTimeout(this._timer);
  }

  private async _tick(): Promise<void> {
    if (this._disposed) {
      return;
    }
    let failures = this._failures;
    try {
      const job = await within(this.source.job(this.ref.id), REQUEST_MS);
      // After a kernel restart or a reload, and for a job that ended while the page was away,
      // its lines come from the log; a run cell's own (streaming) ones stay as they came.
      const detached =
        this.ref.restored || this._detached || !this.source.streaming();
      this._detached =
        detached && (!job.terminal || this._detached || this.ref.restored);
      let lines = this._view.lines;
      let svg = this._view.svg ?? null;
      if (this._detached) {
        lines = await within(this.source.lines(job), REQUEST_MS);
        if (job.terminal && this.source.plot) {
          svg = await within(this.source.plot(job), REQUEST_MS).catch(
            () => null
          );
        }
      }
      failures = 0;
      this._update({ job, lines, svg, problem: null, done: job.terminal });
    } catch (error) {
      failures += 1;
      if (error instanceof TfcApiError && error.status === 404) {
        this._update({
          problem: 'this Jupyter server no longer knows the job',
          done: true
        });
      } else {
        const text = error instanceof TfcApiError ? error.text : String(error);
        this._update({
          problem: `cannot reach the job: ${text} (trying again)`
        });
      }
    }
    this._failures = failures;
    if (this._disposed || this._view.done) {
      return;
    }
    const wait = nextDelay(failures);
    if (this.now() + wait > this._deadline) {
      this._update({
        problem: 'stopped following the job (too long)',
        done: true
      });
      return;
    }
    this._timer = window.setTimeout(() => void this._tick(), wait);
  }

  private _update(change: Partial<IJobView>): void {
    if (this._disposed) {
      return;
    }
    this._view = { ...this._view, ...change };
    this.show(this._view);
  }

  private _view: IJobView;
  private _deadline = 0;
  private _failures = 0;
  private _detached = false;
  private _disposed = false;
  private _timer = 0;
}

/** Draw a view into `node`. */
export function renderView(node: HTMLElement, view: IJobView): void {
  node.textContent = '';
  node.dataset.jobId = view.id;
  node.dataset.state = view.job?.state ?? 'unknown';
  node.dataset.following = String(!view.done);
  const status = document.createElement('div');
  status.className = 'tfc-JobOutput-status';
  const name = document.createElement('span');
  name.className = 'tfc-JobOutput-name';
  name.textContent = view.job
    ? `${view.job.name} · ${shortId(view.id)}`
    : view.id;
  name.title = view.id;
  status.append('Job ', name, ': ');
  const state = document.createElement('span');
  state.className = 'tfc-JobOutput-state';
  state.textContent = view.job ? stateText(view.job) : 'asking the server…';
  status.appendChild(state);
  if (view.job?.state === 'failed' && view.job.error) {
    status.append(` (${view.job.error})`);
  }
  node.appendChild(status);
  if (view.lines !== null) {
    const note = document.createElement('div');
    note.className = 'tfc-JobOutput-note';
    note.textContent = DETACHED_NOTE;
    node.appendChild(note);
    const lines = document.createElement('pre');
    lines.className = 'tfc-JobOutput-lines';
    lines.textContent = view.lines.length
      ? view.lines.join('\n')
      : '(no lines yet)';
    node.appendChild(lines);
    if (view.svg) {
      const plot = document.createElement('img');
      plot.className = 'tfc-JobOutput-plot';
      plot.alt = 'the loss and metrics of the job, by epoch';
      plot.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(view.svg)}`;
      node.appendChild(plot);
    }
    const back = view.job?.terminal ? view.job.returned : null;
    const gone = !!back && !!view.job?.returned_gone;
    const hint = document.createElement('div');
    hint.className =
      back && !gone ? 'tfc-JobOutput-returned' : 'tfc-JobOutput-hint';
    hint.textContent = gone
      ? restartedHint(view.id)
      : (back ?? attachHint(view.id));
    node.appendChild(hint);
  }
  if (view.problem) {
    const problem = document.createElement('div');
    problem.className = 'tfc-JobOutput-problem';
    problem.textContent = view.problem;
    node.appendChild(problem);
  }
}

/** Renders a job output; follows the job while it is shown (until disposed). */
class JobOutputRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly tracker: INotebookTracker | null) {
    super();
    this.addClass('tfc-JobOutput');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const ref = jobRefOf(model.data[MIME_TYPE]);
    if (this._watcher && ref && this._watcher.view.id === ref.id) {
      return Promise.resolve(); // the same job: it is followed already
    }
    this._watcher?.dispose();
    this._watcher = null;
    this.node.textContent = '';
    if (!ref) {
      return Promise.resolve();
    }
    this._watcher = new JobWatcher(
      ref,
      {
        job: getJob,
        lines: job => latestLog(job),
        streaming: () => this.streaming(),
        // the run cell's own fits, as its live plot drew them (not the cells above's)
        plot: job => getMetrics(job.id, true).then(m => m.svg)
      },
      view => renderView(this.node, view)
    );
    renderView(this.node, this._watcher.view);
    this._watcher.start();
    return Promise.resolve();
  }

  dispose(): void {
    this._watcher?.dispose();
    this._watcher = null;
    super.dispose();
  }

  /** True while the cell holding this output runs in this page (the kernel streams into it). */
  private streaming(): boolean {
    const panel = this.tracker?.find(p => p.node.contains(this.node));
    const cell = panel?.content.widgets.find(c => c.node.contains(this.node));
    if (!cell || cell.model.type !== 'code') {
      return false;
    }
    const state = (cell.model as unknown as { executionState?: string })
      .executionState;
    const kernel = panel?.sessionContext.session?.kernel;
    return state === 'running' && !!kernel && kernel.status !== 'restarting';
  }

  private _watcher: JobWatcher | null = null;
}

/** The renderer factory for `MIME_TYPE` (safe: it shows text it asked this server for). */
export function jobOutputRendererFactory(
  tracker: INotebookTracker | null
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    defaultRank: 40,
    createRenderer: () => new JobOutputRenderer(tracker)
  };
}

/** A code cell as `restorable` needs it: its id and the jobs its outputs follow. */
export interface ICellJobs {
  id: string;
  jobs: string[];
}

/**
 * The cells of a notebook opened again whose saved outputs are not of the job they launched
 * last, or are of a job that ended after the file was saved (the autosave cut its lines and
 * plot): cell id -> that job's id. `path` is the notebook's path under the server's `root`;
 * `savedAt` when its file was saved last (ms). Only jobs launched since are meant: the file
 * cannot hold their outputs.
 */
export function restorable(
  cells: ICellJobs[],
  jobs: IJob[],
  path: string,
  root: string,
  savedAt: number
): Map<string, string> {
  const newest = new Map<string, IJob>();
  for (const job of jobs) {
    if (
      !job.cell_id ||
      !job.notebook ||
      job.created_at * 1000 <= savedAt ||
      pathUnderRoot(job.notebook, root) !== path
    ) {
      continue;
    }
    const seen = newest.get(job.cell_id);
    if (!seen || seen.created_at < job.created_at) {
      newest.set(job.cell_id, job);
    }
  }
  const found = new Map<string, string>();
  for (const cell of cells) {
    const job = newest.get(cell.id);
    if (job && !cell.jobs.includes(job.id)) {
      found.set(cell.id, job.id);
    }
  }
  for (const cell of cells) {
    // The file holds this job's outputs as the autosave cut them: the job ended after it.
    const job = jobs.find(j => j.id === cell.jobs[cell.jobs.length - 1]);
    if (
      job?.terminal &&
      !found.has(cell.id) &&
      job.ended_at !== null &&
      job.ended_at * 1000 > savedAt
    ) {
      found.set(cell.id, job.id);
    }
  }
  return found;
}

/** The job ids a cell's outputs follow. */
export function jobsOfOutputs(outputs: unknown[]): string[] {
  const ids: string[] = [];
  for (const output of outputs) {
    const data = isObject(output) ? output.data : undefined;
    const ref = isObject(data) ? jobRefOf(data[MIME_TYPE]) : null;
    if (ref) {
      ids.push(ref.id);
    }
  }
  return ids;
}

/**
 * A notebook just opened: each cell that launched a job since the file was saved shows that
 * job's output instead of what the file holds (an earlier run's). `jobs` are the recent jobs.
 */
export function restoreCells(
  panel: NotebookPanel,
  jobs: IJob[],
  root: string
): string[] {
  const saved = panel.context.contentsModel?.last_modified;
  const savedAt = saved ? Date.parse(saved) : NaN;
  if (!Number.isFinite(savedAt)) {
    return [];
  }
  const cells = panel.content.widgets
    .filter(cell => cell.model.type === 'code')
    .map(cell => ({
      id: cell.model.id,
      jobs: jobsOfOutputs(cell.model.sharedModel.toJSON().outputs as unknown[])
    }));
  const found = restorable(cells, jobs, panel.context.path, root, savedAt);
  for (const cell of panel.content.widgets) {
    const id = found.get(cell.model.id);
    if (id && cell.model.type === 'code') {
      const outputs = (
        cell.model as unknown as {
          outputs: { clear(): void; add(output: JSONObject): number };
        }
      ).outputs;
      outputs.clear();
      outputs.add(jobOutput(id));
    }
  }
  return [...found.values()];
}
