/**
 * The notebook toolbar button and the "Launch on ..." command.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  Notification,
  ToolbarButton
} from '@jupyterlab/apputils';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import {
  INotebookModel,
  INotebookTracker,
  NotebookPanel
} from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { CommandRegistry } from '@lumino/commands';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

import { CommandIDs } from '../commands';
import { tfcIcon } from '../icons';
import { launchNotebook } from '../launch';
import { trackSettings } from '../settings';

const PLUGIN_ID = 'tfc-jupyter:plugin';

/** Adds the Launch button to every notebook's toolbar. */
class LaunchButton implements DocumentRegistry.IWidgetExtension<
  NotebookPanel,
  INotebookModel
> {
  constructor(private readonly commands: CommandRegistry) {}

  createNew(panel: NotebookPanel): IDisposable {
    const button = new ToolbarButton({
      className: 'tfc-LaunchButton',
      icon: tfcIcon,
      label: 'Launch',
      tooltip:
        'Launch this notebook as a TensorFlow job (as shown in the editor, unsaved edits included)',
      onClick: () => void this.commands.execute(CommandIDs.launch)
    });
    panel.toolbar.insertAfter('cellType', 'tfcLaunch', button);
    return new DisposableDelegate(() => button.dispose());
  }
}

/** The launch command, its palette entry and the toolbar button; reads the settings. */
export const launchPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Launch the notebook in the editor as a TensorFlow job (tfc_jupyter).',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    registry: ISettingRegistry | null
  ) => {
    const settings = trackSettings(registry, PLUGIN_ID);
    app.commands.addCommand(CommandIDs.launch, {
      label: 'Launch on ...',
      caption:
        'Run the current notebook (unsaved edits included) as a TensorFlow job',
      icon: tfcIcon,
      execute: async () => {
        const panel = tracker.currentWidget;
        if (!panel) {
          Notification.warning(
            'Open a notebook first: Launch runs the notebook in the editor.'
          );
          return;
        }
        const job = await launchNotebook(panel, settings);
        if (job) {
          app.shell.activateById('tfc-jupyter-jobs');
          await app.commands.execute(CommandIDs.openJob, { id: job.id });
        }
      }
    });
    palette?.addItem({
      command: CommandIDs.launch,
      category: 'TensorFlow jobs'
    });
    app.docRegistry.addWidgetExtension(
      'Notebook',
      new LaunchButton(app.commands)
    );
  }
};
