/**
 * The one source of job state in the frontend: a {@link JobStore} polls the jobs API and every
 * view (the sidebar, each job's detail tab and its title) reads from it, so they cannot disagree.
 */
import { useSyncExternalStore } from 'react';

import { getJob, getMetrics, listJobs, readLogs } from './api';
import { TfcApiError } from './request';
import { IJob, IMetrics } from './types';

/** What the store knows of one job that a detail view shows (beyond its record). */
interface IWatched {
  /** Detail views showing it. */
  views: number;
  /** Its id as the server gave it (the view may have named it by a prefix or suffix). */
  id: string | null;
  /** Why it could not be read, when it could not. */
  error: TfcApiError | null;
  /** Its metrics and their plot, once read. */
  metrics: IMetrics | null;
  /** Bytes in the watcher's own log (the "supervisor" tab): shown only when there are some. */
  supervisorBytes: number;
  /** The extras (metrics, supervisor log) were read after the job ended: nothing more to read. */
  final: boolean;
}

/** How often a hidden page reads the list while a job runs (to hear it end). */
export const HIDDEN_MS = 15000;

/**
 * Polls the jobs API every `intervalMs` (every `HIDDEN_MS` while the page is hidden and a job
 * runs, not at all when none does): the job list, and for
 * each job a detail view shows its record, metrics and supervisor log size. Listeners are called
 * after each round that changed something; `version` changes with them.
 */
export class JobStore {
  private _jobs: IJob[] | null = null;
  private readonly _byId = new Map<string, IJob>();
  private readonly _watched = new Map<string, IWatched>();
  private readonly _listeners = new Set<() => void>();
  private readonly _endListeners = new Set<(job: IJob) => void>();
  private _error: TfcApiError | null = null;
  private _version = 0;
  private _timer: number | undefined;
  private _round: Promise<void> | null = null;
  private _again = false;
  private _stopped = true;
  /** When the last polled round began (ms). */
  private _last = 0;
  /** The server has no metrics endpoint (an older tfc_jupyter): stop asking. */
  private _noMetrics = false;

  constructor(
    private readonly intervalMs = 2000,
    private readonly limit = 50
  ) {}

  /** Jobs, newest first; null until the first answer. */
  get jobs(): IJob[] | null {
    return this._jobs;
  }

  /** Why the last list request failed (null when it did not). */
  get error(): TfcApiError | null {
    return this._error;
  }

  /** Changes whenever something the views show changed. */
  get version(): number {
    return this._version;
  }

  /** A job by the id a view was opened with (a full id, or the prefix or suffix it resolved). */
  job(key: string): IJob | undefined {
    const id = this._watched.get(key)?.id ?? key;
    return this._byId.get(id);
  }

  /** Why a watched job could not be read. */
  jobError(key: string): TfcApiError | null {
    return this._watched.get(key)?.error ?? null;
  }

  /** A watched job's metrics (null before they are read, or when there are none). */
  metrics(key: string): IMetrics | null {
    return this._watched.get(key)?.metrics ?? null;
  }

  /** Bytes in a watched job's supervisor log. */
  supervisorBytes(key: string): number {
    return this._watched.get(key)?.supervisorBytes ?? 0;
  }

  /** Call `listener` after every change; returns the unsubscribe function. */
  subscribe = (listener: () => void): (() => void) => {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  };

  /**
   * Call `listener` with each job seen to end: one this page saw queued, pending or running
   * that an answer now gives as ended (never a job that had ended when first seen). Returns the
   * unsubscribe function.
   */
  onEnd(listener: (job: IJob) => void): () => void {
    this._endListeners.add(listener);
    return () => this._endListeners.delete(listener);
  }

  /**
   * A detail view shows this job: read its record, metrics and supervisor log each round (until
   * it has ended and they were read once more). Returns the function that ends the watch.
   */
  watch(key: string): () => void {
    const entry = this._watched.get(key);
    if (entry) {
      entry.views += 1;
    } else {
      this._watched.set(key, {
        views: 1,
        id: this._byId.has(key) ? key : null,
        error: null,
        metrics: null,
        supervisorBytes: 0,
        final: false
      });
    }
    void this.refresh();
    return () => {
      const current = this._watched.get(key);
      if (current && --current.views <= 0) {
        this._watched.delete(key);
      }
    };
  }

  /** A job as an answer of the API gave it (a cancel): every view shows it now. */
  put(job: IJob): void {
    this._store(job);
    this._changed();
    void this.refresh();
  }

  /** Jobs deleted through the API: gone from every view now. */
  forget(ids: string[]): void {
    const gone = new Set(ids);
    ids.forEach(id => this._byId.delete(id));
    if (this._jobs) {
      this._jobs = this._jobs.filter(job => !gone.has(job.id));
    }
    this._changed();
    void this.refresh();
  }

  /** Start polling (the first round now). */
  start(): void {
    if (!this._stopped) {
      return;
    }
    this._stopped = false;
    void this._loop();
  }

  /** Stop polling. */
  stop(): void {
    this._stopped = true;
    if (this._timer !== undefined) {
      window.clearTimeout(this._timer);
      this._timer = undefined;
    }
  }

  /** One round now (or right after the one under way). */
  async refresh(): Promise<void> {
    if (this._round) {
      this._again = true;
      return this._round;
    }
    this._round = (async () => {
      do {
        this._again = false;
        await this._poll();
      } while (this._again);
    })();
    try {
      await this._round;
    } finally {
      this._round = null;
    }
  }

  private async _loop(): Promise<void> {
    if (this._stopped) {
      return;
    }
    if (this._due()) {
      this._last = Date.now();
      await this.refresh();
    }
    if (!this._stopped) {
      this._timer = window.setTimeout(() => void this._loop(), this.intervalMs);
    }
  }

  /**
   * Whether a round is due: every tick while the page shows; while it is hidden, every
   * `HIDDEN_MS` and only while a job runs (its end is still heard, and said on the desktop).
   */
  private _due(): boolean {
    if (!document.hidden || this._jobs === null) {
      return true;
    }
    const running = this._jobs.some(job => !job.terminal);
    return running && Date.now() - this._last >= HIDDEN_MS;
  }

  /** One round: the list, then each watched job; listeners are told once, at the end. */
  private async _poll(): Promise<void> {
    try {
      const jobs = sortJobs(await listJobs(this.limit)).map(job =>
        this._latest(job)
      );
      this._jobs = jobs;
      jobs.forEach(job => this._set(job));
      this._error = null;
    } catch (e) {
      this._error = asApiError(e);
    }
    const listed = new Set((this._jobs ?? []).map(j => j.id));
    await Promise.all(
      [...this._watched.entries()].map(async ([key, entry]) => {
        try {
          const known = entry.id ? this._byId.get(entry.id) : undefined;
          if (!known || (!listed.has(known.id) && !known.terminal)) {
            const job = await getJob(key);
            this._store(job);
            entry.id = job.id;
          }
          entry.error = null;
        } catch (e) {
          entry.error = asApiError(e);
          return;
        }
        await this._readExtras(entry);
      })
    );
    this._changed();
  }

  /** A watched job's metrics and supervisor log size, while it runs and once after. */
  private async _readExtras(entry: IWatched): Promise<void> {
    const job = entry.id ? this._byId.get(entry.id) : undefined;
    if (!job || entry.final) {
      return;
    }
    const ended = job.terminal;
    let complete = true; // every read answered: after the end, nothing more to read
    const failed = (): void => {
      complete = false;
    };
    const reads: Promise<void>[] = [
      readLogs(job.id, 'supervisor', 0, false, 1)
        .then(chunk => {
          entry.supervisorBytes = chunk.size;
        })
        .catch(failed)
    ];
    if (!this._noMetrics) {
      reads.push(
        getMetrics(job.id)
          .then(metrics => {
            entry.metrics = metrics;
          })
          .catch(e => {
            if (e instanceof TfcApiError && e.serverMissing) {
              this._noMetrics = true; // an older server: its jobs have no metrics endpoint
            } else {
              failed();
            }
          })
      );
    }
    await Promise.all(reads);
    entry.final = ended && complete;
  }

  /** The latest answer about a job, for every view: the list's row is replaced too. */
  private _store(answer: IJob): void {
    const job = this._latest(answer);
    this._set(job);
    if (this._jobs?.some(j => j.id === job.id)) {
      this._jobs = this._jobs.map(j => (j.id === job.id ? job : j));
    }
  }

  /**
   * The answer, unless it is older than what is known: an answer asked for before a cancel can
   * arrive after it, and an ended job never runs again.
   */
  private _latest(answer: IJob): IJob {
    const known = this._byId.get(answer.id);
    return known && known.terminal && !answer.terminal ? known : answer;
  }

  /** Keep `job`, telling the end listeners when it is seen to end. */
  private _set(job: IJob): void {
    const before = this._byId.get(job.id);
    this._byId.set(job.id, job);
    if (before && !before.terminal && job.terminal) {
      this._endListeners.forEach(listener => listener(job));
    }
  }

  private _changed(): void {
    this._version += 1;
    this._listeners.forEach(listener => listener());
  }
}

/** Newest first (by creation time; the id breaks ties). */
function sortJobs(jobs: IJob[]): IJob[] {
  return [...jobs].sort(
    (a, b) => b.created_at - a.created_at || b.id.localeCompare(a.id)
  );
}

function asApiError(e: unknown): TfcApiError {
  return e instanceof TfcApiError ? e : new TfcApiError(String(e), 0);
}

/** Re-render the component whenever the store changes. */
export function useJobStore(store: JobStore): number {
  return useSyncExternalStore(store.subscribe, () => store.version);
}
