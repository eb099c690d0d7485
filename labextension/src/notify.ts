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
import { IJobGroup, labelOf, SWEEP_LABEL, sweepSummary } from './groups';
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

/** Where a page keeps when it last saw the jobs (POSIX seconds), for the next page to open. */
export const SEEN_KEY = 'tfc-jupyter:jobs-seen-at';

/**
 * The jobs that ended while no page of this browser was open: ended after `seenAt` (when a
 * page last saw the list, POSIX seconds; null: never, and nothing is told), oldest end first.
 */
export function missedEnds(jobs: IJob[], seenAt: number | null): IJob[] {
  if (seenAt === null || !Number.isFinite(seenAt)) {
    return [];
  }
  return jobs
    .filter(j => j.terminal && j.ended_at !== null && j.ended_at > seenAt)
    .sort((a, b) => (a.ended_at ?? 0) - (b.ended_at ?? 0));
}

/**
 * Tells the ends missed while no page was open, once, when the page first lists the jobs, then
 * keeps when this page saw them (in `storage`, shared by the browser's pages).
 */
export class MissedEnds {
  constructor(
    private readonly tell: (job: IJob) => void,
    private readonly storage: Pick<
      Storage,
      'getItem' | 'setItem'
    > | null = window.localStorage,
    private readonly now: () => number = Date.now
  ) {
    const kept = this.storage?.getItem(SEEN_KEY);
    this._seenAt = kept ? Number(kept) : null;
  }

  /** The jobs as listed now (null: not listed yet). */
  listed(jobs: IJob[] | null): void {
    if (jobs === null) {
      return;
    }
    if (!this._told) {
      this._told = true;
      missedEnds(jobs, this._seenAt).forEach(job => this.tell(job));
    }
    try {
      this.storage?.setItem(SEEN_KEY, String(this.now() / 1000));
    } catch {
      // storage full or refused: the next page tells nothing it missed
    }
  }

  private _seenAt: number | null;
  private _told = false;
}

/**
 * How long a sweep stays without a running trial before its end is told: its driver starts
 * the next trial as soon as one ends, and the list shows it within a poll or two.
 */
export const SWEEP_QUIET_MS = 10000;

/** The words and kind of a sweep's end: `Sweep lr-search ended: 8 trials: 7 succeeded, 1 failed`. */
export function sweepEndNotice(group: IJobGroup): {
  text: string;
  kind: 'success' | 'error' | 'info';
} {
  const { name, text } = sweepSummary(group);
  const states = group.jobs.map(j => j.state);
  const kind = states.every(s => s === 'succeeded')
    ? 'success'
    : states.every(s => s === 'failed')
      ? 'error'
      : 'info';
  return { text: `Sweep ${name} ended: ${text}`, kind };
}

/**
 * One notification a sweep, not one a trial (a sweep of 50 trials raised 50): the end of a
 * job alone is told at once (`tellJob`); a trial's end waits `quietMs`, and when its sweep then
 * has no trial running, the sweep's end is told once, with a button that opens the sweep.
 */
export class EndNotices {
  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly jobs: () => IJob[] | null,
    private readonly tellJob: (job: IJob) => void,
    private readonly quietMs = SWEEP_QUIET_MS
  ) {}

  /** The store's end listener. */
  ended(job: IJob): void {
    const sweep = labelOf(job, SWEEP_LABEL);
    if (sweep === null) {
      this.tellJob(job);
      return;
    }
    const waiting = this._timers.get(sweep);
    if (waiting !== undefined) {
      clearTimeout(waiting);
    }
    this._timers.set(
      sweep,
      setTimeout(() => this._check(sweep), this.quietMs)
    );
  }

  /** Stop the timers (the page is going). */
  dispose(): void {
    this._timers.forEach(t => clearTimeout(t));
    this._timers.clear();
  }

  private _check(sweep: string): void {
    this._timers.delete(sweep);
    const trials = (this.jobs() ?? []).filter(
      j => labelOf(j, SWEEP_LABEL) === sweep
    );
    if (!trials.length || trials.some(j => !j.terminal)) {
      return; // a trial still runs: its end asks again
    }
    const { text, kind } = sweepEndNotice({
      key: `sweep:${sweep}`,
      sweep,
      jobs: trials,
      running: false
    });
    const open = () =>
      void this.app.commands.execute(CommandIDs.openSweep, { id: sweep });
    Notification.emit(text, kind, {
      autoClose: kind === 'error' ? false : SUCCESS_MS,
      actions: [{ label: 'Open sweep', callback: open }]
    });
    if (document.hidden && desktopAllowed()) {
      const shown = new window.Notification('TensorFlow sweep ended', {
        body: text,
        tag: `sweep:${sweep}`
      });
      shown.onclick = () => {
        window.focus();
        open();
      };
    }
  }

  private readonly _timers = new Map<string, ReturnType<typeof setTimeout>>();
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
