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
 * values). A notebook sends its model as `notebook`; a script sends its text as `source` and
 * never `notebook` or `cell`, which the server refuses for a script.
 */
export function jobRequest(
  content: LaunchContent,
  options: IJobOptions,
  replace: boolean
): ICreateJob {
  const body: ICreateJob = {
    path: content.path,
    dirty: content.dirty,
    options,
    replace
  };
  if (content.kind === 'notebook') {
    body.notebook = content.notebook;
  } else if (content.source !== null) {
    body.source = content.source;
  }
  return body;
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
