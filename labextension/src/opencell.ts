/**
 * "Go to cell N, line M" in a failed job's view: open the job's notebook and select the cell it
 * failed at, as the link in the job's own cell does (see celllink.ts).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import { NotebookPanel } from '@jupyterlab/notebook';

import { readLogs } from './api';
import { goTo, ICellLink } from './celllink';
import { codeAt, failedReplica, pathUnderRoot } from './format';
import { IJob } from './types';

/** How much of the end of a log is searched for the failing line's text. */
const TAIL_BYTES = 256 * 1024;

/**
 * The failing line's text as the job ran it (its traceback in the failed replica's log), so a
 * cell moved since is still found; "" when the log does not say.
 */
export async function failingCode(
  job: IJob,
  location: string
): Promise<string> {
  const replica = failedReplica(job) ?? 'chief';
  const head = await readLogs(job.id, replica, 0, false, 1);
  let offset = Math.max(0, head.size - TAIL_BYTES);
  let text = '';
  for (let reads = 0; reads < 8; reads++) {
    const chunk = await readLogs(job.id, replica, offset, false, TAIL_BYTES);
    text += chunk.text;
    if (!chunk.more || chunk.next_offset <= offset) {
      break;
    }
    offset = chunk.next_offset;
  }
  return codeAt(text, location);
}

/**
 * Open the job's notebook (the one under the server's root folder it was launched from) and
 * select the cell the job failed at, the cursor on the line.
 */
export async function openFailedCell(
  app: JupyterFrontEnd,
  job: IJob,
  link: ICellLink
): Promise<void> {
  const root = PageConfig.getOption('serverRoot');
  const path = job.notebook ? pathUnderRoot(job.notebook, root) : null;
  if (!path) {
    Notification.warning(
      `${job.notebook ?? 'The notebook'} is not under this server's root folder: open it to see ${link.text}.`,
      { autoClose: 6000 }
    );
    return;
  }
  let code = link.code;
  if (!code) {
    try {
      code = await failingCode(job, link.text);
    } catch {
      code = ''; // the log is gone: the cell's number alone
    }
  }
  const widget = await app.commands.execute('docmanager:open', {
    path,
    factory: 'Notebook'
  });
  if (!(widget instanceof NotebookPanel)) {
    return;
  }
  await widget.context.ready;
  app.shell.activateById(widget.id);
  await widget.revealed;
  await goTo(widget.content, { ...link, code });
}
