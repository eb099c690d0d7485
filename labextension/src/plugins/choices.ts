/**
 * The launch panel's choices, kept in the notebook's metadata (see ../choices.ts).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ISessionContext } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { KernelMessage } from '@jupyterlab/services';

import { bundleFromMessage, choicesRendererFactory, sameNotebook, storeChoices } from '../choices';

/** Follow one notebook's kernel: its panel's choices go into its live model's metadata. */
function follow(panel: NotebookPanel): void {
  const onMessage = (_: ISessionContext, msg: KernelMessage.IMessage) => {
    const bundle =
      msg.channel === 'iopub' ? bundleFromMessage(msg as KernelMessage.IIOPubMessage) : null;
    const context = panel.context;
    if (!bundle?.panel || !context.isReady || context.model.readOnly) {
      return;
    }
    if (sameNotebook(bundle.notebook, context.localPath)) {
      storeChoices(context.model, bundle.panel);
    }
  };
  // Connected with the panel as receiver: disposing the panel disconnects it.
  panel.sessionContext.iopubMessage.connect(onMessage, panel);
}

/** The renderer of the choices' output, and the metadata writer for every notebook. */
export const choicesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tfc-jupyter:panel-choices',
  description:
    "Keeps the launch panel's last choices in the notebook's metadata (tfc_jupyter.panel).",
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker, rendermime: IRenderMimeRegistry) => {
    rendermime.addFactory(choicesRendererFactory);
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_, panel) => follow(panel));
  }
};
