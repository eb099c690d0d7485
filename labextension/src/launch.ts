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
import {
  cellOf,
  emptyValue,
  fromOptions,
  ILaunchValues,
  toOptions
} from './components/LaunchForm';
import { TfcApiError } from './request';
import { ILaunchSettings } from './settings';
import {
  defaultRunCell,
  hasUnsavedCells,
  isScriptPath,
  jobRequest,
  LaunchContent,
  LaunchKind,
  runCells,
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
  /** Whether the editor marks it as changed since it was saved. */
  dirty(): boolean;
  /**
   * Whether it has edits its saved file does not (what the form and the plan warn about): a
   * notebook counts its cells only (see `hasUnsavedCells`), not the metadata the kernel fills
   * in when it opens.
   */
  unsaved(): Promise<boolean>;
  /** The 0-based index of a notebook's active cell (null: none, or a script). */
  activeCell(): number | null;
  /** What a request sends of it, as it is in the editor now. */
  content(): LaunchContent;
  /** False when the launch sends the saved file, not the editor's content. */
  readonly live: boolean;
}

/** Reads a notebook's saved file (its JSON), for `ILaunchTarget.unsaved`. */
export type ReadSaved = (path: string) => Promise<Record<string, unknown>>;

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
  widget: Widget | null | undefined,
  readSaved?: ReadSaved
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
      unsaved: async () => context.model.dirty,
      activeCell: () => null,
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
      unsaved: async () => {
        if (!context.model.dirty) {
          return false;
        }
        if (!readSaved) {
          return true;
        }
        try {
          const saved = await readSaved(context.path);
          return hasUnsavedCells(liveNotebook(widget), saved);
        } catch {
          return true; // never saved, or unreadable: what the editor says
        }
      },
      activeCell: () =>
        widget.content.activeCell ? widget.content.activeCellIndex : null,
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
  const values: ILaunchValues = {};
  for (const field of defaults.fields ?? []) {
    values[field.name] = emptyValue(field);
  }
  return {
    ...values,
    backend: settings.backend || server('backend') || 'local',
    machine: settings.machine,
    strategy: 'auto',
    region: settings.region || server('region'),
    project: server('project'),
    cell: ''
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
  let unsaved = await target.unsaved();
  const request = (
    options: IJobOptions,
    replace: boolean,
    cell: number | null
  ): ICreateJob =>
    jobRequest({ ...target.content(), dirty: unsaved }, options, replace, cell);
  // A notebook with several %%tfc_run cells: the form offers them, from the active one (or the
  // first); one is always named, so the plan never says "pass --cell".
  const content = target.content();
  const cells = content.kind === 'notebook' ? runCells(content.notebook) : [];
  const picked =
    cells.length > 1 ? defaultRunCell(cells, target.activeCell()) : null;
  const fresh = initialValues(defaults, settings);
  /** The form's values for a cell's own flags (its dry run), the rest the defaults. */
  const cellValues = async (cell: number | null): Promise<ILaunchValues> => {
    const plan = (await createJob(request({ dry_run: true }, false, cell)))
      .plan;
    return {
      ...fromOptions(
        plan.options,
        String(plan.options.backend ?? ''),
        fresh,
        defaults.fields ?? []
      ),
      cell: cell === null ? '' : String(cell)
    };
  };
  let initial: ILaunchValues = {
    ...fresh,
    cell: picked === null ? '' : String(picked)
  };
  let initialError: string | null = null;
  try {
    initial = await cellValues(picked);
  } catch (error) {
    initialError = message(error); // the cell as it is cannot make a job: say why, in the form
  }
  for (;;) {
    const body = new LaunchDialogBody({
      kind: target.kind,
      documentName: target.name,
      dirty: unsaved,
      live: target.live,
      defaults,
      machines,
      initial,
      cells,
      loadCell: cellValues,
      initialError,
      preview: async (options, cell) =>
        (await createJob(request({ ...options, dry_run: true }, true, cell)))
          .plan
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
      unsaved = await target.unsaved();
      const created = await createJob(
        request(
          toOptions(result.value, defaults.fields ?? []),
          true,
          cellOf(result.value)
        )
      );
      if (!created.job && created.sweep) {
        // a sweep on this machine: its driver launches the trials; the sidebar lists them
        Notification.success(
          `Started sweep ${created.sweep}: ${created.trials} trials, ` +
            `${created.parallel} at once`,
          { autoClose: 4000 }
        );
        return null;
      }
      const job = created.job as IJob;
      Notification.success(
        `Launched ${job.id} on ${job.backend}` +
          (unsaved && target.live ? ' (with the unsaved edits)' : ''),
        { autoClose: 4000 }
      );
      return job;
    } catch (error) {
      initialError = `Launch failed: ${message(error)}`; // the form again, values kept
    }
  }
}
