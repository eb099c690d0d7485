/**
 * The run cell's job output, and the cells of a notebook opened again put back on their jobs
 * (see ../joboutput.ts).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { listJobs } from '../api';
import { jobOutputRendererFactory, restoreCells } from '../joboutput';

/** How many recent jobs a notebook opened again is matched with. */
const RECENT = 50;

/** The renderer of a run cell's job output. */
export const jobOutputPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tfc-jupyter:job-output',
  description:
    "Shows a run cell's job as it goes, to its end, after a kernel restart or a page reload too.",
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [INotebookTracker],
  activate: (
    _app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    tracker: INotebookTracker | null
  ) => {
    rendermime.addFactory(jobOutputRendererFactory(tracker));
    tracker?.widgetAdded.connect((_, panel) => {
      void panel.context.ready
        .then(() => listJobs(RECENT))
        .then(jobs => {
          if (!panel.isDisposed) {
            restoreCells(panel, jobs, PageConfig.getOption('serverRoot'));
          }
        })
        .catch(() => undefined); // no server extension, no answer: the saved outputs stay
    });
  }
};
