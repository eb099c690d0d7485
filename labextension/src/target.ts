/**
 * What a launch runs, as the jobs API takes it: a notebook (its live model) or a Python script
 * (the editor's text). Pure functions only: the widgets' side is in launch.ts.
 */
import { ICreateJob, IJobOptions } from './types';

/** A notebook (`.ipynb`: its `%%tfc_run` cell and the cells above) or a script (`.py`). */
export type LaunchKind = 'notebook' | 'script';

/** Whether the server runs `path` as a Python script (it goes by the `.py` suffix). */
export function isScriptPath(path: string): boolean {
  return /\.py$/.test(path);
}

/** The document to launch, as it is in the editor at the moment of a request. */
export type LaunchContent =
  | {
      kind: 'notebook';
      /** The path under the server root. */
      path: string;
      /** The model has unsaved edits. */
      dirty: boolean;
      /** The notebook's JSON as the editor holds it. */
      notebook: { [key: string]: unknown };
    }
  | {
      kind: 'script';
      path: string;
      dirty: boolean;
      /** The script's text as the editor holds it; null: the server reads the saved file. */
      source: string | null;
    };

/**
 * The POST /jobs body for `content` with `options` (`replace`: they replace the cell's own
 * values). A notebook sends its model as `notebook`, and `cell` (the 1-based position of the
 * `%%tfc_run` cell to run) when one is chosen; a script sends its text as `source` and never
 * `notebook` or `cell`, which the server refuses for a script.
 */
export function jobRequest(
  content: LaunchContent,
  options: IJobOptions,
  replace: boolean,
  cell?: number | null
): ICreateJob {
  const body: ICreateJob = {
    path: content.path,
    dirty: content.dirty,
    options,
    replace
  };
  if (content.kind === 'notebook') {
    body.notebook = content.notebook;
    if (typeof cell === 'number' && cell > 0) {
      body.cell = cell;
    }
  } else if (content.source !== null) {
    body.source = content.source;
  }
  return body;
}

/** A notebook cell's text (nbformat allows a list of lines). */
function sourceOf(cell: { [key: string]: unknown }): string {
  const source = cell.source;
  return Array.isArray(source) ? source.join('') : String(source ?? '');
}

/** The cells of a notebook's JSON (an empty list when it has none). */
function cellsOf(notebook: { [key: string]: unknown }): {
  [key: string]: unknown;
}[] {
  const cells = notebook.cells;
  return Array.isArray(cells)
    ? cells.filter(
        (cell): cell is { [key: string]: unknown } =>
          typeof cell === 'object' && cell !== null
      )
    : [];
}

/** A `%%tfc_run` cell of a notebook: what the launch form offers to run. */
export interface IRunCell {
  /** Its 1-based position among all the notebook's cells (markdown ones counted). */
  number: number;
  /** Its `%%tfc_run` line, as written. */
  line: string;
  /** Its first line of code after the `%%tfc_run` line ("" when none). */
  code: string;
}

/** The first line of a cell's text that is not blank ("" when none). */
function firstLine(source: string): string {
  return source.split('\n').find(line => line.trim()) ?? '';
}

/**
 * Whether a cell's text is a `%%tfc_run` cell: its first non-blank line is `%%tfc_run`, alone
 * or with flags (tfc_jupyter/notebook/capture.py, `is_run_cell`).
 */
export function isRunCell(source: string): boolean {
  const first = firstLine(source);
  return first === '%%tfc_run' || first.startsWith('%%tfc_run ');
}

/** The `%%tfc_run` code cells of a notebook's JSON, in notebook order. */
export function runCells(notebook: { [key: string]: unknown }): IRunCell[] {
  const found: IRunCell[] = [];
  cellsOf(notebook).forEach((cell, index) => {
    const source = sourceOf(cell);
    if (cell.cell_type !== 'code' || !isRunCell(source)) {
      return;
    }
    const lines = source.split('\n');
    const at = lines.findIndex(line => line.trim());
    const code = lines
      .slice(at + 1)
      .find(line => line.trim() && !line.trim().startsWith('#'));
    found.push({
      number: index + 1,
      line: lines[at].trim(),
      code: (code ?? '').trim()
    });
  });
  return found;
}

/**
 * The `%%tfc_run` cell a launch starts from: the active cell when it is one (`active`: its
 * 0-based index), else the first; null when the notebook has none.
 */
export function defaultRunCell(
  cells: IRunCell[],
  active: number | null
): number | null {
  const current =
    active === null ? undefined : cells.find(c => c.number === active + 1);
  return (current ?? cells[0])?.number ?? null;
}

/**
 * What of a notebook decides what its job runs: each cell's type, text and tags (notebook
 * metadata, outputs and execution counts left out).
 */
function runnable(notebook: { [key: string]: unknown }): string {
  return JSON.stringify(
    cellsOf(notebook).map(cell => {
      const metadata = cell.metadata as { tags?: unknown } | undefined;
      const tags = Array.isArray(metadata?.tags) ? metadata?.tags : [];
      return [cell.cell_type, sourceOf(cell), tags];
    })
  );
}

/**
 * Whether the editor's notebook holds edits its saved file does not: a cell's type, text or
 * tags differ, or cells were added, removed or moved. JupyterLab marks a notebook just opened
 * as changed when the kernel fills in its metadata (`language_info`, the kernelspec's name):
 * that is no edit of what runs, and is not counted.
 */
export function hasUnsavedCells(
  live: { [key: string]: unknown },
  saved: { [key: string]: unknown }
): boolean {
  return runnable(live) !== runnable(saved);
}

/** A notebook's JSON without outputs and execution counts (they are not needed to run it). */
export function withoutOutputs(content: { [key: string]: unknown }): {
  [key: string]: unknown;
} {
  const cells = Array.isArray(content.cells) ? content.cells : [];
  return {
    ...content,
    cells: cells.map(cell =>
      cell && cell.cell_type === 'code'
        ? { ...cell, outputs: [], execution_count: null }
        : cell
    )
  };
}

/** A word as a POSIX shell reads it back (quoted only when it has to be). */
export function shellQuote(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) {
    return word;
  }
  return `'${word.replace(/'/g, "'\"'\"'")}'`;
}

/**
 * The command that launches the script `name` as a plan's `%%tfc_run` line does (the CLI takes
 * the same flags): `tfc-jupyter run train.py --args '--epochs 3'`.
 */
export function scriptCommand(line: string, name: string): string {
  const flags = line.replace(/^\s*%%tfc_run\b\s*/, '').trim();
  return `tfc-jupyter run ${shellQuote(name)}${flags ? ` ${flags}` : ''}`;
}
