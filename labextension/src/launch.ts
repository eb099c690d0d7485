/**
 * Launching the notebook in the editor: the form, the dry run and the launch itself. The
 * notebook's live model is sent, so unsaved edits are what runs.
 */
import { Dialog, Notification, showErrorMessage } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';

import { createJob, getDefaults, getMachines } from './api';
import { fromOptions, ILaunchValues, toOptions } from './components/LaunchForm';
import { TfcApiError } from './request';
import { ILaunchSettings } from './settings';
import { ICreateJob, IDefaults, IJob, IJobOptions } from './types';
import { LaunchDialogBody } from './widgets';

/** The notebook as the editor holds it now, outputs left out (they are not needed to run it). */
export function liveNotebook(panel: NotebookPanel): Record<string, unknown> {
  const content = panel.context.model.toJSON() as { cells?: any[] };
  const cells = (content.cells ?? []).map(cell =>
    cell.cell_type === 'code'
      ? { ...cell, outputs: [], execution_count: null }
      : cell
  );
  return { ...content, cells };
}

function initialValues(
  defaults: IDefaults,
  settings: ILaunchSettings
): ILaunchValues {
  const server = (key: string): string =>
    String(defaults.settings[key]?.value ?? '');
  return {
    backend: settings.backend || server('backend') || 'local',
    machine: settings.machine,
    workers: '0',
    gpus: '',
    gpu_type: '',
    tpu: '',
    strategy: 'auto',
    region: settings.region || server('region'),
    project: server('project'),
    name: '',
    labels: '',
    args: ''
  };
}

function message(error: unknown): string {
  return error instanceof TfcApiError ? error.text : String(error);
}

/**
 * Ask where to run the notebook, then launch it; resolves to the job (null when not launched).
 * The form starts from the cell's own `%%tfc_run` options (a first dry run says them), checks
 * every change with the server's dry run, and sends exactly what it shows. A launch that fails
 * opens the form again with the same values and the error.
 */
export async function launchNotebook(
  panel: NotebookPanel,
  settings: ILaunchSettings
): Promise<IJob | null> {
  await panel.context.ready;
  let defaults: IDefaults;
  let machines;
  try {
    [defaults, machines] = await Promise.all([getDefaults(), getMachines()]);
  } catch (error) {
    await showErrorMessage('tfc_jupyter', message(error));
    return null;
  }
  const path = panel.context.path;
  const request = (options: IJobOptions, replace: boolean): ICreateJob => ({
    path,
    notebook: liveNotebook(panel),
    dirty: panel.context.model.dirty,
    options,
    replace
  });
  let initial = initialValues(defaults, settings);
  let initialError: string | null = null;
  try {
    const cell = (await createJob(request({ dry_run: true }, false))).plan;
    initial = fromOptions(
      cell.options,
      String(cell.options.backend ?? ''),
      initial
    );
  } catch (error) {
    initialError = message(error); // the cell as it is cannot make a job: say why, in the form
  }
  for (;;) {
    const body = new LaunchDialogBody({
      notebookName: panel.context.localPath.split('/').pop() ?? path,
      dirty: panel.context.model.dirty,
      defaults,
      machines,
      initial,
      initialError,
      preview: async options =>
        (await createJob(request({ ...options, dry_run: true }, true))).plan
    });
    const dialog = new Dialog({
      title: 'Launch on ...',
      body,
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Launch' })]
    });
    dialog.addClass('tfc-LaunchDialog');
    const result = await dialog.launch();
    if (!result.button.accept || !result.value) {
      return null;
    }
    initial = result.value;
    if (!body.ok) {
      initialError =
        'The choices cannot make a job yet: see the message below, then Launch.';
      continue; // Enter pressed while the choices were being checked, or wrong
    }
    try {
      const created = await createJob(request(toOptions(result.value), true));
      const job = created.job as IJob;
      Notification.success(
        `Launched ${job.id} on ${job.backend}` +
          (panel.context.model.dirty ? ' (with the unsaved edits)' : ''),
        { autoClose: 4000 }
      );
      return job;
    } catch (error) {
      initialError = `Launch failed: ${message(error)}`; // the form again, values kept
    }
  }
}
