/**
 * The "Go to cell N, line M" link a failed job leaves in its cell (see ../celllink.ts).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { cellLinkRendererFactory } from '../celllink';

/** The renderer of the failure link. */
export const cellLinkPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tfc-jupyter:cell-link',
  description:
    'Turns where a job failed (cell and line) into a link to that cell.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [INotebookTracker],
  activate: (
    _app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    tracker: INotebookTracker | null
  ) => {
    rendermime.addFactory(cellLinkRendererFactory(tracker));
  }
};
