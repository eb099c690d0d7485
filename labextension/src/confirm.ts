/**
 * The question asked before jobs leave the list (a job's Remove, the list's Clear finished).
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';

/**
 * Ask whether to remove: null to keep them, else whether their folders on this machine go
 * too. `withFiles` and `listOnly` are the two buttons' words.
 */
export async function askRemove(
  title: string,
  body: string,
  withFiles: string,
  listOnly: string
): Promise<{ files: boolean } | null> {
  const answer = await showDialog({
    title,
    body,
    buttons: [
      Dialog.cancelButton({ label: 'Keep' }),
      Dialog.warnButton({ label: withFiles }),
      Dialog.warnButton({ label: listOnly })
    ]
  });
  return answer.button.accept
    ? { files: answer.button.label === withFiles }
    : null;
}
