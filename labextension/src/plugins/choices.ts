/**
 * The launch panel's memory output, rendered as one dim line (see ../choices.ts).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { choicesRendererFactory } from '../choices';

/** The renderer of the launch panel's memory output. */
export const choicesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tfc-jupyter:panel-choices',
  description:
    "Shows the launch panel's remembered %%tfc_run line as one dim line.",
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (_app: JupyterFrontEnd, rendermime: IRenderMimeRegistry) => {
    rendermime.addFactory(choicesRendererFactory);
  }
};
