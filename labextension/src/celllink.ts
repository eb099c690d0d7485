/**
 * "Go to the failing cell": when a job a cell launched fails, the kernel shows where, as a
 * display output of MIME type `MIME_TYPE` (tfc_jupyter/returns/cell.py, `failure_link`): the notebook
 * cell (1-based, markdown cells counted, as the job's source map counts them), the line in it,
 * and that line's text as saved. This renders it as a link; a click selects the cell in the
 * notebook that holds the output and puts the cursor on the line. The cell is found by its
 * number when its line there still reads as saved, else by the first cell whose line does (cells
 * added or moved since), else by its number.
 */
import {
  INotebookTracker,
  Notebook,
  NotebookPanel
} from '@jupyterlab/notebook';
import { IRenderMime } from '@jupyterlab/rendermime';
import { JSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

/** The MIME type of the failure link (tfc_jupyter/returns/cell.py, `LINK_MIME`). */
export const MIME_TYPE = 'application/vnd.tfc-jupyter.cell-link+json';
const VERSION = 1;

/** Where a job failed, as the kernel sends it. */
export interface ICellLink {
  cell: number;
  line: number;
  code: string;
  text: string;
}

function isObject(value: unknown): value is JSONObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The link in a bundle this version understands, else null. */
export function linkOf(data: unknown): ICellLink | null {
  if (!isObject(data) || data.version !== VERSION) {
    return null;
  }
  const { cell, line, code, text } = data;
  if (
    typeof cell !== 'number' ||
    typeof line !== 'number' ||
    cell < 1 ||
    line < 1
  ) {
    return null;
  }
  return {
    cell,
    line,
    code: typeof code === 'string' ? code : '',
    text: typeof text === 'string' ? text : `cell ${cell}, line ${line}`
  };
}

/**
 * The link to where a job failed, from its record: `location` as the job API gives it
 * (`error_location`: "cell 7, line 3"), `code` the line's text when known. Null for a location
 * that is not a notebook cell's (a script's line, none).
 */
export function linkOfLocation(
  location: string | null | undefined,
  code = ''
): ICellLink | null {
  const match = /^cell (\d+), line (\d+)$/.exec((location ?? '').trim());
  if (!match) {
    return null;
  }
  return linkOf({
    version: VERSION,
    cell: Number(match[1]),
    line: Number(match[2]),
    code,
    text: `cell ${match[1]}, line ${match[2]}`
  });
}

/** The 0-based index of the cell the link means in `sources` (each cell's text). */
export function cellIndex(link: ICellLink, sources: string[]): number {
  const lineOf = (source: string): string | undefined =>
    source.split('\n')[link.line - 1]?.trim();
  const wanted = link.code.trim();
  const byNumber = link.cell - 1;
  if (!wanted || lineOf(sources[byNumber] ?? '') === wanted) {
    return Math.min(byNumber, sources.length - 1);
  }
  const moved = sources.findIndex(source => lineOf(source) === wanted);
  return moved >= 0 ? moved : Math.min(byNumber, sources.length - 1);
}

/** Select the linked cell of `notebook` and put the cursor at the start of its line. */
export async function goTo(notebook: Notebook, link: ICellLink): Promise<void> {
  const cells = notebook.widgets;
  if (!cells.length) {
    return;
  }
  const index = cellIndex(
    link,
    cells.map(cell => cell.model.sharedModel.getSource())
  );
  notebook.deselectAll();
  notebook.activeCellIndex = index;
  const cell = cells[index];
  await notebook.scrollToCell(cell);
  if (cell.model.type === 'code' && cell.editor) {
    notebook.mode = 'edit';
    cell.editor.setCursorPosition({ line: link.line - 1, column: 0 });
    cell.editor.focus();
  }
}

/** Renders the link; clicks go to the notebook panel holding the output. */
class CellLinkRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly tracker: INotebookTracker | null) {
    super();
    this.addClass('tfc-CellLink');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const link = linkOf(model.data[MIME_TYPE]);
    this.node.textContent = '';
    if (!link) {
      return Promise.resolve();
    }
    const anchor = document.createElement('a');
    anchor.href = '#';
    anchor.textContent = `Go to ${link.text}`;
    anchor.title = 'select the cell where the job failed';
    anchor.addEventListener('click', event => {
      event.preventDefault();
      const panel = this.panel();
      if (panel) {
        void goTo(panel.content, link);
      }
    });
    this.node.appendChild(anchor);
    return Promise.resolve();
  }

  /** The notebook panel whose output this is. */
  private panel(): NotebookPanel | null {
    return this.tracker?.find(panel => panel.node.contains(this.node)) ?? null;
  }
}

/** The renderer factory for `MIME_TYPE` (safe: it shows text and a link that stays here). */
export function cellLinkRendererFactory(
  tracker: INotebookTracker | null
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    defaultRank: 40,
    createRenderer: () => new CellLinkRenderer(tracker)
  };
}
