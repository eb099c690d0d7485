/**
 * The launch panel's memory in the notebook: the kernel-side panel (`%tfc_panel`) shows its
 * choices as a display output of MIME type `MIME_TYPE`, updated in place; this module copies
 * them into the live notebook model's metadata (`metadata.tfc_jupyter.panel`), so the user's
 * next save stores them. The kernel never writes the .ipynb (JupyterLab would meet a changed
 * file on its next save), and writing the live model keeps every unsaved edit.
 */
import { KernelMessage } from '@jupyterlab/services';
import { IRenderMime } from '@jupyterlab/rendermime';
import { INotebookModel } from '@jupyterlab/notebook';
import {
  JSONExt,
  JSONObject,
  PartialJSONObject,
  ReadonlyPartialJSONObject
} from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

/** The MIME type of the choices (tfc_jupyter/panel/memory.py, `MIME_TYPE`). */
export const MIME_TYPE = 'application/vnd.tfc-jupyter.panel-choices+json';
/** The notebook metadata key; the choices are under `panel`. */
export const METADATA_KEY = 'tfc_jupyter';
const VERSION = 1;

/** What the kernel sends: the choices (or null before any) and the notebook they are for. */
export interface IChoicesBundle {
  version: number;
  notebook: string | null;
  panel: JSONObject | null;
}

function isObject(value: unknown): value is JSONObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The bundle's data when it is one this version understands, else null. */
export function parseBundle(data: unknown): IChoicesBundle | null {
  if (!isObject(data) || data.version !== VERSION) {
    return null;
  }
  const notebook = typeof data.notebook === 'string' ? data.notebook : null;
  const panel = isObject(data.panel) ? data.panel : null;
  return { version: VERSION, notebook, panel };
}

/** The choices in a kernel message (display_data or update_display_data), else null. */
export function bundleFromMessage(msg: KernelMessage.IIOPubMessage): IChoicesBundle | null {
  const type = msg.header.msg_type;
  if (type !== 'display_data' && type !== 'update_display_data') {
    return null;
  }
  const content = msg.content as KernelMessage.IDisplayDataMsg['content'];
  return parseBundle(content.data?.[MIME_TYPE]);
}

/**
 * Whether the kernel's notebook path (absolute, as the kernel found it; null when it does not
 * know its file) names the notebook at `localPath` (relative to the server's root). A panel
 * opened with `--notebook other.ipynb` remembers its choices for that notebook, not this one.
 */
export function sameNotebook(kernelPath: string | null, localPath: string): boolean {
  if (!kernelPath) {
    return true;
  }
  const mine = localPath.replace(/\\/g, '/').replace(/^\/+/, '');
  const theirs = kernelPath.replace(/\\/g, '/');
  return theirs === mine || theirs.endsWith(`/${mine}`);
}

/**
 * Put the choices into `metadata.tfc_jupyter.panel` of the live model (other keys kept).
 * Returns false when they are there already (the notebook is not made dirty for nothing).
 */
export function storeChoices(model: INotebookModel, panel: JSONObject): boolean {
  const current = model.getMetadata(METADATA_KEY) as unknown;
  const meta: PartialJSONObject = isObject(current) ? { ...current } : {};
  if (isObject(meta.panel) && JSONExt.deepEqual(meta.panel as ReadonlyPartialJSONObject, panel)) {
    return false;
  }
  meta.panel = panel;
  model.setMetadata(METADATA_KEY, meta);
  return true;
}

/** Renders the output as one small, dim line: the choices themselves go to the metadata. */
class ChoicesRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('tfc-PanelChoices');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const bundle = parseBundle(model.data[MIME_TYPE]);
    this.node.textContent = bundle?.panel
      ? 'Launch panel choices: kept in this notebook\u2019s metadata (saved with the notebook).'
      : '';
    this.node.title = 'metadata.tfc_jupyter.panel (tfc_jupyter)';
    return Promise.resolve();
  }
}

/** The renderer factory for `MIME_TYPE` (safe: it shows fixed text only). */
export const choicesRendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 40,
  createRenderer: () => new ChoicesRenderer()
};
