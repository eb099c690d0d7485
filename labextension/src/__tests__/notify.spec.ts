/**
 * Hearing when a job ends (issue 38): the store tells its end listeners of each job it saw
 * running and now sees ended, once, and never of a job that had ended when first seen; the
 * notification's words and kind.
 */
import { Notification } from '@jupyterlab/apputils';

import { listJobs } from '../api';
import { endedText } from '../format';
import {
  EndNotices,
  endNotice,
  MissedEnds,
  missedEnds,
  notifyEnd,
  SEEN_KEY,
  SWEEP_QUIET_MS
} from '../notify';
import { HIDDEN_MS, JobStore } from '../store';
import { IJob } from '../types';
import { makeJob } from './jobfixture';

jest.mock('@jupyterlab/apputils', () => ({
  Notification: { emit: jest.fn(), info: jest.fn() }
}));
jest.mock('../api', () => ({
  getJob: jest.fn(),
  getMetrics: jest.fn(),
  listJobs: jest.fn(),
  readLogs: jest.fn()
}));

function job(id: string, overrides: Partial<IJob> = {}): IJob {
  return makeJob({
    id,
    name: 'quickstart',
    state: 'running',
    terminal: false,
    notebook: null,
    created_at: 1,
    started_at: 1,
    ended_at: null,
    elapsed: 125,
    cost_estimate: null,
    ...overrides
  });
}

const ended = (id: string, overrides: Partial<IJob> = {}): IJob =>
  job(id, { state: 'succeeded', terminal: true, ...overrides });

describe('JobStore.onEnd', () => {
  it('tells of each job seen running that ends, once', async () => {
    const list = listJobs as jest.Mock;
    const store = new JobStore(1000);
    const heard: string[] = [];
    store.onEnd(j => heard.push(`${j.id} ${j.state}`));
    list.mockResolvedValueOnce([job('a-000001'), ended('b-000002')]);
    await store.refresh();
    expect(heard).toEqual([]); // b had ended before this page saw it
    list.mockResolvedValueOnce([
      ended('a-000001', { state: 'failed' }),
      ended('b-000002')
    ]);
    await store.refresh();
    expect(heard).toEqual(['a-000001 failed']);
    list.mockResolvedValueOnce([ended('a-000001', { state: 'failed' })]);
    await store.refresh();
    expect(heard).toEqual(['a-000001 failed']); // once
  });
});

describe('endedText and endNotice', () => {
  it('says how it ended, in one line, with its loss or its error', () => {
    const done = ended('quickstart-20261127-100000-a1b2c3', {
      last_metrics: { loss: 0.0429, accuracy: 0.9 }
    });
    expect(endedText(done)).toBe(
      'quickstart · a1b2c3 succeeded after 2 min 05 s (loss 0.0429)'
    );
    expect(endNotice(done)).toEqual({ kind: 'success', autoClose: 15000 });
    const failed = ended('x-a1b2c4', {
      state: 'failed',
      error: 'chief failed at cell 3, line 2: ValueError: bad\nmore'
    });
    expect(endedText(failed)).toBe(
      'quickstart · a1b2c4 failed after 2 min 05 s: chief failed at cell 3, line 2: ValueError: bad'
    );
    expect(endNotice(failed)).toEqual({ kind: 'error', autoClose: false });
    const nan = ended('x-a1b2c5', {
      metric_flags: ['loss is NaN from epoch 3']
    });
    expect(endedText(nan)).toBe(
      'quickstart · a1b2c5 succeeded after 2 min 05 s; loss is NaN from epoch 3'
    );
    expect(endNotice(nan).kind).toBe('info'); // a success that is not one
  });
});

describe('JobStore in a hidden page', () => {
  let hidden = false;
  beforeAll(() => {
    Object.defineProperty(document, 'hidden', {
      configurable: true,
      get: () => hidden
    });
  });
  afterEach(() => {
    jest.useRealTimers();
    hidden = false;
  });

  it('still hears a running job end, reading the list every HIDDEN_MS', async () => {
    jest.useFakeTimers();
    const list = listJobs as jest.Mock;
    list.mockReset();
    list.mockResolvedValue([job('a-000001')]);
    const store = new JobStore(1000);
    const heard: string[] = [];
    store.onEnd(j => heard.push(j.id));
    store.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(list).toHaveBeenCalledTimes(1); // shown: read at once
    hidden = true; // the user went to another tab
    await jest.advanceTimersByTimeAsync(HIDDEN_MS - 2000);
    expect(list).toHaveBeenCalledTimes(1); // hidden: not every second
    list.mockResolvedValue([ended('a-000001')]);
    await jest.advanceTimersByTimeAsync(2000);
    expect(list).toHaveBeenCalledTimes(2);
    expect(heard).toEqual(['a-000001']); // heard while hidden: said on the desktop
    await jest.advanceTimersByTimeAsync(4 * HIDDEN_MS);
    expect(list).toHaveBeenCalledTimes(2); // nothing runs: a hidden page asks nothing
    hidden = false;
    await jest.advanceTimersByTimeAsync(1000);
    expect(list).toHaveBeenCalledTimes(3); // back in view: read every tick again
    store.stop();
  });
});

describe('notifyEnd', () => {
  it('says it in JupyterLab, with a button that opens the job', () => {
    const execute = jest.fn();
    const app = { commands: { execute } } as any;
    notifyEnd(app, ended('quickstart-20261127-100000-a1b2c3'));
    const emit = Notification.emit as jest.Mock;
    expect(emit).toHaveBeenCalledTimes(1);
    const [text, kind, options] = emit.mock.calls[0];
    expect(text).toBe('quickstart · a1b2c3 succeeded after 2 min 05 s');
    expect(kind).toBe('success');
    expect(options.actions[0].label).toBe('Open job');
    options.actions[0].callback();
    expect(execute).toHaveBeenCalledWith('tfc-jupyter:open-job', {
      id: 'quickstart-20261127-100000-a1b2c3'
    });
    expect(options.actions).toHaveLength(1); // it did not fail: no cell to go to
  });

  it('offers the failing cell of a job that failed in one', () => {
    const app = { commands: { execute: jest.fn() } } as any;
    const goToCell = jest.fn();
    const failed = ended('quickstart-20261127-100000-d4e5f6', {
      state: 'failed',
      error: 'ValueError: bad batch',
      error_location: 'cell 7, line 3'
    });
    const emit = Notification.emit as jest.Mock;
    emit.mockClear();
    notifyEnd(app, failed, goToCell);
    const [text, kind, options] = emit.mock.calls[0];
    expect(text).toBe(
      'quickstart · d4e5f6 failed after 2 min 05 s: ValueError: bad batch'
    );
    expect(kind).toBe('error');
    expect(options.autoClose).toBe(false);
    expect(options.actions.map((a: any) => a.label)).toEqual([
      'Open job',
      'Go to cell 7, line 3'
    ]);
    options.actions[1].callback();
    expect(goToCell).toHaveBeenCalledWith(
      failed,
      expect.objectContaining({ cell: 7, line: 3 })
    );
    emit.mockClear(); // a failure in a script (no cell): nothing to go to
    notifyEnd(app, { ...failed, error_location: 'train.py, line 4' }, goToCell);
    expect(emit.mock.calls[0][2].actions).toHaveLength(1);
  });
});

describe('EndNotices: one notification a sweep', () => {
  const trial = (n: number, state: IJob['state'], terminal = true): IJob =>
    job(`lr-search-trial-${n}-20261127-10000${n}-00000${n}`, {
      name: `lr-search-trial-${n}`,
      state,
      terminal,
      spec: { labels: { 'tfc-sweep': 'lr-search-k1', 'tfc-trial': String(n) } }
    });

  it('tells a job alone at once, and a sweep once when no trial runs', () => {
    jest.useFakeTimers();
    const emit = Notification.emit as jest.Mock;
    emit.mockClear();
    const execute = jest.fn();
    const app = { commands: { execute } } as any;
    const told: string[] = [];
    let jobs: IJob[] = [trial(1, 'succeeded'), trial(2, 'running', false)];
    const notices = new EndNotices(
      app,
      () => jobs,
      j => told.push(j.id)
    );
    notices.ended(ended('alone-20261127-100000-a1b2c3'));
    expect(told).toEqual(['alone-20261127-100000-a1b2c3']); // a job alone: at once
    notices.ended(jobs[0]); // a trial ended while the next runs: nothing said
    jest.advanceTimersByTime(SWEEP_QUIET_MS);
    expect(emit).not.toHaveBeenCalled();
    jobs = [
      trial(1, 'succeeded'),
      trial(2, 'failed'),
      trial(3, 'running', false)
    ];
    notices.ended(jobs[1]); // the driver started trial 3: still nothing
    jest.advanceTimersByTime(SWEEP_QUIET_MS);
    expect(emit).not.toHaveBeenCalled();
    jobs = [trial(1, 'succeeded'), trial(2, 'failed'), trial(3, 'succeeded')];
    notices.ended(jobs[2]);
    jest.advanceTimersByTime(SWEEP_QUIET_MS - 1);
    expect(emit).not.toHaveBeenCalled(); // the driver may still start a trial
    jest.advanceTimersByTime(1);
    expect(emit).toHaveBeenCalledTimes(1); // three trials, one notification
    const [text, kind, options] = emit.mock.calls[0];
    expect(text).toBe('Sweep lr-search ended: 3 trials: 1 failed, 2 succeeded');
    expect(kind).toBe('info');
    expect(options.actions.map((a: any) => a.label)).toEqual(['Open sweep']);
    options.actions[0].callback();
    expect(execute).toHaveBeenCalledWith('tfc-jupyter:open-sweep', {
      id: 'lr-search-k1'
    });
    expect(told).toHaveLength(1); // no trial was told as a job
    notices.dispose();
    jest.useRealTimers();
  });
});

describe('MissedEnds', () => {
  const at = (
    id: string,
    ended: number | null,
    state: IJob['state'] = 'succeeded'
  ): IJob => job(id, { state, terminal: ended !== null, ended_at: ended });

  it('tells the jobs that ended after a page last saw them, oldest first', () => {
    const jobs = [
      at('late', 300),
      at('before', 100),
      at('running', null),
      at('gone', 250, 'failed')
    ];
    expect(missedEnds(jobs, 200).map(j => j.id)).toEqual(['gone', 'late']);
    expect(missedEnds(jobs, null)).toEqual([]); // no page ever saw them: nothing to tell
  });

  it('tells them once, when the page first lists the jobs, and keeps when it saw them', () => {
    const kept = new Map<string, string>([[SEEN_KEY, '200']]);
    const storage = {
      getItem: (k: string) => kept.get(k) ?? null,
      setItem: (k: string, v: string) => void kept.set(k, v)
    };
    const told: string[] = [];
    const missed = new MissedEnds(
      j => told.push(j.id),
      storage,
      () => 400_000
    );
    missed.listed(null);
    expect(told).toEqual([]);
    missed.listed([at('late', 300), at('before', 100)]);
    missed.listed([at('late', 300), at('before', 100)]);
    expect(told).toEqual(['late']);
    expect(kept.get(SEEN_KEY)).toBe('400');
    const next = new MissedEnds(
      j => told.push(j.id),
      storage,
      () => 500_000
    );
    next.listed([at('late', 300)]);
    expect(told).toEqual(['late']); // seen by the page before
  });
});
