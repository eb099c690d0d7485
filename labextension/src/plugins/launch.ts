/**
 * The "Launch on ..." command and its toolbar button, on notebooks and on Python script editors.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  Dialog,
  ICommandPalette,
  showDialog,
  ToolbarButton
} from '@jupyterlab/apputils';
import { DocumentRegistry, IDocumentWidget } from '@jupyterlab/docregistry';
import { ILauncher } from '@jupyterlab/launcher';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { CommandRegistry } from '@lumino/commands';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';
import { Widget } from '@lumino/widgets';

import { CommandIDs } from '../commands';
import { tfcIcon } from '../icons';
import {
  ILaunchTarget,
  launchDocument,
  launchTarget,
  ReadSaved
} from '../launch';
import { trackSettings } from '../settings';
import { isScriptPath } from '../target';

const PLUGIN_ID = 'tfc-jupyter:plugin';

/** The widget factory of JupyterLab's file editor (text files, .py included). */
const EDITOR_FACTORY = 'Editor';

/**
 * Adds the Launch button to every notebook's toolbar, or to every Python script editor's (shown
 * while the file's name ends in .py).
 */
class LaunchButton implements DocumentRegistry.WidgetExtension {
  constructor(
    private readonly commands: CommandRegistry,
    private readonly kind: 'notebook' | 'script'
  ) {}

  createNew(
    widget: IDocumentWidget,
    context: DocumentRegistry.Context
  ): IDisposable {
    const button = new ToolbarButton({
      className: 'tfc-LaunchButton',
      icon: tfcIcon,
      label: 'Launch',
      tooltip: `Launch this ${this.kind} as a TensorFlow job (as shown in the editor, unsaved edits included)`,
      onClick: () =>
        void this.commands.execute(CommandIDs.launch, { widget: widget.id })
    });
    if (this.kind === 'notebook') {
      widget.toolbar.insertAfter('cellType', 'tfcLaunch', button);
      return new DisposableDelegate(() => button.dispose());
    }
    widget.toolbar.addItem('tfcLaunch', button);
    const show = (): void => button.setHidden(!isScriptPath(context.path));
    show();
    context.pathChanged.connect(show);
    return new DisposableDelegate(() => {
      context.pathChanged.disconnect(show);
      button.dispose();
    });
  }
}

/** The launch command, its palette entry and the toolbar buttons; reads the settings. */
export const launchPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Launch the notebook or Python script in the editor as a TensorFlow job (tfc_jupyter).',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ISettingRegistry, ILauncher],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    registry: ISettingRegistry | null,
    launcher: ILauncher | null
  ) => {
    const settings = trackSettings(registry, PLUGIN_ID);
    // The launchable document last current in the main area: the sidebar's button (or a job
    // tab in front) launches it.
    let last: Widget | null = null;
    app.shell.currentChanged?.connect((_, change) => {
      if (launchTarget(change.newValue)) {
        last = change.newValue;
      }
    });
    const byId = (id: string): Widget | null => {
      for (const widget of app.shell.widgets('main')) {
        if (widget.id === id) {
          return widget;
        }
      }
      return null;
    };
    // A notebook's saved file, to tell edits of its cells from metadata the kernel filled in.
    const readSaved: ReadSaved = async path =>
      (
        await app.serviceManager.contents.get(path, {
          type: 'notebook',
          content: true
        })
      ).content as Record<string, unknown>;
    const targetOf = (
      widget: Widget | null | undefined
    ): ILaunchTarget | null => launchTarget(widget, readSaved);
    /** The document the command launches: its `widget` argument, else the one in front. */
    const target = (args: { widget?: unknown }): ILaunchTarget | null => {
      if (typeof args.widget === 'string' && args.widget) {
        return targetOf(byId(args.widget));
      }
      return (
        targetOf(app.shell.currentWidget) ??
        (last && last.isAttached ? targetOf(last) : null) ??
        targetOf(tracker.currentWidget)
      );
    };
    app.commands.addCommand(CommandIDs.launch, {
      label: 'Launch on ...',
      caption:
        'Run the current notebook or Python script (unsaved edits included) as a TensorFlow job',
      icon: tfcIcon,
      execute: async args => {
        const document = target(args);
        if (!document) {
          // said where it is seen: a toast alone may only move the bell's counter
          await showDialog({
            title: 'Nothing to launch yet',
            body: 'Open a notebook or a Python script (.py) first: Launch runs the one in the editor, unsaved edits included.',
            buttons: [Dialog.okButton({ label: 'OK' })]
          });
          return;
        }
        const job = await launchDocument(document, settings);
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
    // A tile on the Launcher: it launches the notebook or script last in front.
    launcher?.add({
      command: CommandIDs.launch,
      category: 'Other',
      rank: 50
    });
    app.docRegistry.addWidgetExtension(
      'Notebook',
      new LaunchButton(app.commands, 'notebook')
    );
    app.docRegistry.addWidgetExtension(
      EDITOR_FACTORY,
      new LaunchButton(app.commands, 'script')
    );
  }
};
