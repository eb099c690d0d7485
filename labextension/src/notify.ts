/**
 * Hearing when a job ends: a JupyterLab notification (with "Open job"), and a desktop one when
 * the page is in the background and the browser allows it (the "Notify me on the desktop"
 * command asks).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';

import { ICellLink, linkOfLocation } from './celllink';
import { CommandIDs } from './commands';
import { endedText } from './format';
import { IJob } from './types';

/** How long a success stays on screen (a failure stays until dismissed). */
export const SUCCESS_MS = 15000;

/** The notification of a job's end: its kind, and whether it closes by itself. */
export function endNotice(job: IJob): {
  kind: 'success' | 'error' | 'info';
  autoClose: number | false;
} {
  if (job.state === 'failed') {
    return { kind: 'error', autoClose: false };
  }
  if (job.state === 'succeeded' && !(job.metric_flags ?? []).length) {
    return { kind: 'success', autoClose: SUCCESS_MS };
  }
  return { kind: 'info', autoClose: SUCCESS_MS };
}

/** Whether the browser shows desktop notifications for this page. */
export function desktopAllowed(): boolean {
  return (
    typeof window.Notification === 'function' &&
    window.Notification.permission === 'granted'
  );
}

/**
 * Tell the user that `job` ended: in JupyterLab ("Open job", and "Go to cell" for a job that
 * failed in a notebook cell, through `goToCell`), and on the desktop when the page is hidden.
 */
export function notifyEnd(
  app: JupyterFrontEnd,
  job: IJob,
  goToCell?: (job: IJob, link: ICellLink) => void
): void {
  const text = endedText(job);
  const { kind, autoClose } = endNotice(job);
  const actions: { label: string; callback: () => void }[] = [
    {
      label: 'Open job',
      callback: () =>
        void app.commands.execute(CommandIDs.openJob, { id: job.id })
    }
  ];
  const link =
    job.state === 'failed' ? linkOfLocation(job.error_location) : null;
  if (link && goToCell) {
    actions.push({
      label: `Go to ${link.text}`,
      callback: () => goToCell(job, link)
    });
  }
  Notification.emit(text, kind, { autoClose, actions });
  if (document.hidden && desktopAllowed()) {
    const shown = new window.Notification('TensorFlow job ended', {
      body: text,
      tag: job.id
    });
    shown.onclick = () => {
      window.focus();
      void app.commands.execute(CommandIDs.openJob, { id: job.id });
    };
  }
}

/** Ask the browser to show desktop notifications; what it answered, in words. */
export async function askDesktop(): Promise<string> {
  if (typeof window.Notification !== 'function') {
    return 'This browser has no desktop notifications; JupyterLab will still say when a job ends.';
  }
  const answer = await window.Notification.requestPermission();
  return answer === 'granted'
    ? 'Desktop notifications are on: a job that ends while this page is in the background shows one.'
    : 'The browser declined desktop notifications (its site settings can allow them); JupyterLab will still say when a job ends.';
}
