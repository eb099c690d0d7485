/**
 * The launch panel's memory: the kernel-side panel (`%tfc_panel`) shows the `%%tfc_run` line its
 * choices stand for as a display output of MIME type `MIME_TYPE`, updated in place. The output is
 * saved with the notebook like any other, and the next panel starts from it (see
 * tfc_jupyter/panel/memory.py); this module only renders it, as one dim line.
 */
import { IRenderMime } from '@jupyterlab/rendermime';
import { JSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

/** The MIME type of the panel's memory (tfc_jupyter/panel/memory.py, `MIME_TYPE`). */
export const MIME_TYPE = 'application/vnd.tfc-jupyter.panel-choices+json';
const VERSION = 2;

function isObject(value: unknown): value is JSONObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The remembered `%%tfc_run` line of a bundle this version understands, else null. */
export function lineOf(data: unknown): string | null {
  if (
    !isObject(data) ||
    data.version !== VERSION ||
    typeof data.line !== 'string'
  ) {
    return null;
  }
  return data.line;
}

/** The `%%tfc_run` cell the panel had picked (a notebook with several), else null. */
export function cellOf(data: unknown): number | null {
  if (lineOf(data) === null || !isObject(data)) {
    return null;
  }
  const cell = data.cell;
  return typeof cell === 'number' && Number.isInteger(cell) && cell > 0
    ? cell
    : null;
}

/** Renders the output as one small, dim line. */
class ChoicesRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('tfc-PanelChoices');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const line = lineOf(model.data[MIME_TYPE]);
    const cell = cellOf(model.data[MIME_TYPE]);
    const where = cell === null ? '' : ` on cell ${cell}`;
    this.node.textContent = line
      ? `Launch panel: ${line}${where} (remembered in this output, saved with the notebook)`
      : '';
    this.node.title =
      "tfc_jupyter's launch panel remembers its choices in this output";
    return Promise.resolve();
  }
}

/** The renderer factory for `MIME_TYPE` (safe: it shows text only). */
export const choicesRendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 40,
  createRenderer: () => new ChoicesRenderer()
};
