/**
 * Launching the notebook or the Python script in the editor: the form, the dry run and the
 * launch itself. The editor's content (a notebook's live model, a script's text) is sent, so
 * unsaved edits are what runs.
 */
import { Dialog, Notification, showErrorMessage } from '@jupyterlab/apputils';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';

import { createJob, getDefaults, getMachines } from './api';
import { fromOptions, ILaunchValues, toOptions } from './components/LaunchForm';
import { TfcApiError } from './request';
import { ILaunchSettings } from './settings';
import {
  isScriptPath,
  jobRequest,
  LaunchContent,
  LaunchKind,
  withoutOutputs
} from './target';
import { ICreateJob, IDefaults, IJob, IJobOptions } from './types';
import { LaunchDialogBody } from './widgets';

/** The notebook as the editor holds it now, outputs left out (they are not needed to run it). */
export function liveNotebook(panel: NotebookPanel): Record<string, unknown> {
  return withoutOutputs(
    panel.context.model.toJSON() as unknown as Record<string, unknown>
  );
}

/** A document that can be launched: a notebook, or a Python script in an editor. */
export interface ILaunchTarget {
  kind: LaunchKind;
  /** Its path under the server root. */
  readonly path: string;
  /** Its file name, as the form says it. */
  readonly name: string;
  /** Resolves once its content is loaded. */
  readonly ready: Promise<void>;
  /** Whether it has unsaved edits. */
  dirty(): boolean;
  /** What a request sends of it, as it is in the editor now. */
  content(): LaunchContent;
  /** False when the launch sends the saved file, not the editor's content. */
  readonly live: boolean;
}

/** A document widget (a notebook panel, a file editor ...) and its context, duck-typed. */
function documentContext(
  widget: Widget | null | undefined
): DocumentRegistry.Context | null {
  const context = (widget as { context?: DocumentRegistry.Context } | null)
    ?.context;
  return context && typeof context.path === 'string' && context.model
    ? context
    : null;
}

/**
 * What launching `widget` runs: a notebook panel's notebook; a document whose path ends in
 * `.py` (a file editor's text) as a script; null for anything else.
 */
export function launchTarget(
  widget: Widget | null | undefined
): ILaunchTarget | null {
  const context = documentContext(widget);
  if (!widget || !context || widget.isDisposed) {
    return null;
  }
  const common = {
    path: context.path,
    name: context.localPath.split('/').pop() || context.path,
    ready: context.ready,
    dirty: () => context.model.dirty
  };
  if (isScriptPath(context.path)) {
    // A notebook panel on a .py file (jupytext) has no script text: the saved file runs.
    const live = !(widget instanceof NotebookPanel);
    return {
      ...common,
      kind: 'script',
      live,
      content: () => ({
        kind: 'script',
        path: context.path,
        dirty: context.model.dirty,
        source: live ? context.model.toString() : null
      })
    };
  }
  if (widget instanceof NotebookPanel) {
    return {
      ...common,
      kind: 'notebook',
      live: true,
      content: () => ({
        kind: 'notebook',
        path: context.path,
        dirty: context.model.dirty,
        notebook: liveNotebook(widget)
      })
    };
  }
  return null;
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
 * Ask where to run the notebook or script, then launch it; resolves to the job (null when not
 * launched). The form starts from the notebook cell's own `%%tfc_run` options (a first dry run
 * says them), checks every change with the server's dry run, and sends exactly what it shows.
 * A launch that fails opens the form again with the same values and the error.
 */
export async function launchDocument(
  target: ILaunchTarget,
  settings: ILaunchSettings
): Promise<IJob | null> {
  await target.ready;
  let defaults: IDefaults;
  let machines;
  try {
    [defaults, machines] = await Promise.all([getDefaults(), getMachines()]);
  } catch (error) {
    await showErrorMessage('tfc_jupyter', message(error));
    return null;
  }
  const request = (options: IJobOptions, replace: boolean): ICreateJob =>
    jobRequest(target.content(), options, replace);
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
      kind: target.kind,
      documentName: target.name,
      dirty: target.dirty(),
      live: target.live,
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
      const dirty = target.dirty();
      const created = await createJob(request(toOptions(result.value), true));
      const job = created.job as IJob;
      Notification.success(
        `Launched ${job.id} on ${job.backend}` +
          (dirty && target.live ? ' (with the unsaved edits)' : ''),
        { autoClose: 4000 }
      );
      return job;
    } catch (error) {
      initialError = `Launch failed: ${message(error)}`; // the form again, values kept
    }
  }
}
