/**
 * src/joboutput.ts: a run cell's job output. What it shows of the job (state, elapsed time, the
 * latest lines once the kernel no longer streams them, how to attach), how it polls (until the
 * job ends or the output goes, backing off after failures, within a deadline), and which cells
 * of a notebook opened again are put back on the job they launched.
 */
import {
  attachHint,
  DEADLINE_MS,
  IJobView,
  IWatchSource,
  JobWatcher,
  jobOutput,
  jobRefOf,
  jobsOfOutputs,
  latestLines,
  latestLog,
  MAX_BACKOFF_MS,
  MIME_TYPE,
  nextDelay,
  POLL_MS,
  renderView,
  restartedHint,
  restorable,
  stateText
} from '../joboutput';
import { readLogs } from '../api';
import { TfcApiError } from '../request';
import { IJob } from '../types';
import { makeJob } from './jobfixture';

jest.mock('../api', () => ({
  getJob: jest.fn(),
  getMetrics: jest.fn(),
  readLogs: jest.fn()
}));

const ID = 'ticks-20261126-120000-a1b2c3';

function job(overrides: Partial<IJob> = {}): IJob {
  return makeJob({
    id: ID,
    name: 'ticks',
    state: 'running',
    terminal: false,
    notebook: '/srv/root/work/ticks.ipynb',
    cell_id: 'cell-2',
    created_at: 2_000_000_000,
    started_at: 2_000_000_001,
    ended_at: null,
    elapsed: 12,
    cost_per_hour: 0.2,
    job_dir: `/home/me/.tfc-jupyter/jobs/${ID}`,
    ...overrides
  });
}

const ended = (state: IJob['state'] = 'succeeded', elapsed = 17): IJob =>
  job({ state, terminal: true, elapsed, ended_at: 2_000_000_018 });

describe('jobRefOf', () => {
  it('reads the job the kernel names', () => {
    expect(jobRefOf({ version: 1, id: ID })).toEqual({
      id: ID,
      restored: false
    });
    expect(jobRefOf({ version: 1, id: ID, restored: true })).toEqual({
      id: ID,
      restored: true
    });
  });

  it('is null for anything else', () => {
    for (const data of [
      null,
      'x',
      [],
      { id: ID },
      { version: 2, id: ID },
      { version: 1, id: '' },
      { version: 1, id: 3 }
    ]) {
      expect(jobRefOf(data)).toBeNull();
    }
  });

  it("reads back the output a restored cell is given, with the kernel's text", () => {
    const output = jobOutput(ID);
    const data = output.data as { [mime: string]: unknown };
    expect(jobRefOf(data[MIME_TYPE])).toEqual({ id: ID, restored: true });
    expect(data['text/plain']).toContain(`%tfc_attach ${ID}`);
    expect(
      jobsOfOutputs([{ output_type: 'stream', text: 'x' }, output])
    ).toEqual([ID]);
  });
});

describe('stateText', () => {
  it('says the state and the time in words', () => {
    expect(stateText(job())).toBe('running for 12 s');
    expect(stateText(job({ state: 'queued', elapsed: 1 }))).toBe(
      'queued (1 s)'
    );
    expect(stateText(job({ state: 'pending', elapsed: 3 }))).toBe(
      'waiting for its machines (3 s)'
    );
    expect(stateText(ended())).toBe('succeeded after 17 s');
    expect(stateText(ended('failed', 75))).toBe('failed after 1 min 15 s');
    expect(stateText(ended('cancelled'))).toBe('cancelled after 17 s');
  });

  it('names %tfc_attach and nothing else of the magics', () => {
    const hint = attachHint(ID);
    expect(hint).toContain(`%tfc_attach ${ID}`);
    expect(hint.match(/%|--/g)).toEqual(['%']);
  });
});

describe('latestLines', () => {
  it('keeps the last lines as a terminal shows them', () => {
    const text =
      'tick 0\n\x1b[32mtick 1\x1b[0m\n1/4 [=>..]\r4/4 [====]\r\ntick 2\n\n';
    expect(latestLines(text)).toEqual([
      'tick 0',
      'tick 1',
      '4/4 [====]',
      'tick 2'
    ]);
    expect(latestLines(text, 2)).toEqual(['4/4 [====]', 'tick 2']);
  });

  it('leaves out a line the piece starts inside', () => {
    expect(latestLines('ck 7\ntick 8\ntick 9\n', 5, true)).toEqual([
      'tick 8',
      'tick 9'
    ]);
    expect(latestLines('')).toEqual([]);
  });

  it("reads the end of the chief's log, without start-up chatter", async () => {
    const read = readLogs as jest.Mock;
    read.mockReset();
    read
      .mockResolvedValueOnce({ size: 40_000, text: 'x' })
      .mockResolvedValueOnce({ text: 'partial\ntick 41\ntick 42\n' });
    await expect(
      latestLog(job({ replicas: ['chief', 'worker-0'] }), 1)
    ).resolves.toEqual(['tick 42']);
    expect(read.mock.calls[0]).toEqual([ID, 'chief', 0, true, 1]);
    expect(read.mock.calls[1][1]).toBe('chief');
    expect(read.mock.calls[1][2]).toBe(40_000 - 16 * 1024);
    expect(read.mock.calls[1][3]).toBe(true);
  });
});

describe('nextDelay', () => {
  it('polls as the sidebar does, and backs off to a limit after failures', () => {
    expect(nextDelay(0)).toBe(POLL_MS);
    expect(nextDelay(1)).toBe(2 * POLL_MS);
    expect(nextDelay(2)).toBe(4 * POLL_MS);
    expect(nextDelay(40)).toBe(MAX_BACKOFF_MS);
  });
});

/** A source whose answers the test sets; it records what was asked. */
class Source implements IWatchSource {
  jobs: (IJob | Error)[] = [];
  streams = true;
  asked = 0;
  tails = 0;
  plot?: (job: IJob) => Promise<string | null>;

  job(id: string): Promise<IJob> {
    this.asked += 1;
    const next = this.jobs.length > 1 ? this.jobs.shift()! : this.jobs[0];
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  }

  lines(j: IJob): Promise<string[]> {
    this.tails += 1;
    return Promise.resolve([`line of ${j.state}`]);
  }

  streaming(): boolean {
    return this.streams;
  }
}

/** Let the watcher's promises settle, then move the clock by `ms`. */
async function advance(ms: number): Promise<void> {
  await Promise.resolve();
  await jest.advanceTimersByTimeAsync(ms);
}

describe('JobWatcher', () => {
  let views: IJobView[];
  const show = (view: IJobView): void => {
    views.push(view);
  };

  beforeEach(() => {
    jest.useFakeTimers();
    views = [];
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('follows the job while the kernel streams, without lines, until it ends', async () => {
    const source = new Source();
    source.jobs = [job(), job({ elapsed: 14 }), ended()];
    const watcher = new JobWatcher({ id: ID, restored: false }, source, show);
    watcher.start();
    await advance(0);
    expect(watcher.view.job?.elapsed).toBe(12);
    await advance(POLL_MS);
    expect(watcher.view.job?.elapsed).toBe(14);
    await advance(POLL_MS);
    expect(watcher.view.done).toBe(true);
    expect(stateText(watcher.view.job!)).toBe('succeeded after 17 s');
    expect(views.every(v => v.lines === null)).toBe(true);
    expect(source.tails).toBe(0);
    await advance(10 * POLL_MS);
    expect(source.asked).toBe(3); // a job that ended is asked for no more
  });

  it("shows the job's latest lines once the kernel no longer streams, to its end", async () => {
    const source = new Source();
    source.jobs = [job(), job(), ended()];
    const watcher = new JobWatcher({ id: ID, restored: false }, source, show);
    watcher.start();
    await advance(0);
    expect(watcher.view.lines).toBeNull();
    source.streams = false; // the kernel restarted
    await advance(POLL_MS);
    expect(watcher.view.lines).toEqual(['line of running']);
    await advance(POLL_MS);
    expect(watcher.view.lines).toEqual(['line of succeeded']); // the lines it ended with
    expect(watcher.view.done).toBe(true);
  });

  it("leaves a cell's own lines alone when the job ended while it ran", async () => {
    const source = new Source();
    source.jobs = [ended()];
    source.streams = false; // the cell went idle as the job ended
    const watcher = new JobWatcher({ id: ID, restored: false }, source, show);
    watcher.start();
    await advance(0);
    expect(watcher.view.done).toBe(true);
    expect(watcher.view.lines).toBeNull();
  });

  it('shows the lines of a restored output, even of a job that has ended', async () => {
    const source = new Source();
    source.jobs = [ended()];
    const watcher = new JobWatcher({ id: ID, restored: true }, source, show);
    watcher.start();
    await advance(0);
    expect(watcher.view.lines).toEqual(['line of succeeded']);
  });

  it('shows the final lines and plot of a job that ended before the page opened', async () => {
    const source = new Source();
    source.jobs = [ended()];
    let plots = 0;
    source.plot = () => {
      plots += 1;
      return Promise.resolve('<svg>curves</svg>');
    };
    const watcher = new JobWatcher({ id: ID, restored: true }, source, show);
    watcher.start();
    await advance(0);
    expect(watcher.view.lines).toEqual(['line of succeeded']);
    expect(watcher.view.svg).toBe('<svg>curves</svg>');
    expect(plots).toBe(1);
    const streamed = new Source();
    streamed.jobs = [ended()];
    streamed.plot = source.plot;
    const own = new JobWatcher({ id: ID, restored: false }, streamed, show);
    own.start();
    await advance(0);
    expect(own.view.svg ?? null).toBeNull(); // the cell's own plot came as it trained
    expect(plots).toBe(1);
  });

  it('stops asking once disposed', async () => {
    const source = new Source();
    source.jobs = [job()];
    const watcher = new JobWatcher({ id: ID, restored: false }, source, show);
    watcher.start();
    await advance(0);
    watcher.dispose();
    const seen = views.length;
    await advance(20 * POLL_MS);
    expect(source.asked).toBe(1);
    expect(views.length).toBe(seen);
    expect(watcher.isDisposed).toBe(true);
  });

  it('backs off while the server does not answer, and says so', async () => {
    const source = new Source();
    const down = new TfcApiError(
      'the Jupyter server did not answer',
      0,
      'NetworkError'
    );
    source.jobs = [down, down, job()];
    const watcher = new JobWatcher({ id: ID, restored: false }, source, show);
    watcher.start();
    await advance(0);
    expect(watcher.view.problem).toContain('did not answer');
    expect(watcher.view.done).toBe(false);
    await advance(nextDelay(1) - 1);
    expect(source.asked).toBe(1);
    await advance(1);
    expect(source.asked).toBe(2);
    await advance(nextDelay(2));
    expect(source.asked).toBe(3);
    expect(watcher.view.problem).toBeNull();
    expect(watcher.view.job?.state).toBe('running');
  });

  it('gives up on a job the server does not know', async () => {
    const source = new Source();
    source.jobs = [new TfcApiError(`no job ${ID}`, 404, 'JobNotFound')];
    const watcher = new JobWatcher({ id: ID, restored: false }, source, show);
    watcher.start();
    await advance(10 * POLL_MS);
    expect(source.asked).toBe(1);
    expect(watcher.view.done).toBe(true);
    expect(watcher.view.problem).toContain('no longer knows');
  });

  it('stops at its deadline', async () => {
    let now = 0;
    const source = new Source();
    source.jobs = [job()];
    const watcher = new JobWatcher(
      { id: ID, restored: false },
      source,
      show,
      () => now
    );
    watcher.start();
    await advance(0);
    now = DEADLINE_MS;
    await advance(POLL_MS);
    expect(watcher.view.done).toBe(true);
    const asked = source.asked;
    await advance(10 * POLL_MS);
    expect(source.asked).toBe(asked);
  });
});

describe('renderView', () => {
  it('draws the state, and the lines with the attach hint when detached', () => {
    const node = document.createElement('div');
    renderView(node, {
      id: ID,
      job: job(),
      lines: null,
      problem: null,
      done: false
    });
    expect(node.dataset.state).toBe('running');
    expect(node.dataset.following).toBe('true');
    expect(node.textContent).toBe('Job ticks · a1b2c3: running for 12 s');
    expect(node.querySelector('.tfc-JobOutput-hint')).toBeNull();

    renderView(node, {
      id: ID,
      job: ended(),
      lines: ['tick 18', 'tick 19'],
      problem: null,
      done: true
    });
    expect(node.dataset.state).toBe('succeeded');
    expect(node.dataset.following).toBe('false');
    expect(node.querySelector('.tfc-JobOutput-state')?.textContent).toBe(
      'succeeded after 17 s'
    );
    expect(node.querySelector('.tfc-JobOutput-lines')?.textContent).toBe(
      'tick 18\ntick 19'
    );
    expect(node.querySelector('.tfc-JobOutput-hint')?.textContent).toBe(
      attachHint(ID)
    );
  });

  it('says what the kernel set when the job ended, with its plot, instead of the hint', () => {
    const node = document.createElement('div');
    const back = 'Back in the kernel: model, history.';
    renderView(node, {
      id: ID,
      job: { ...ended(), returned: back },
      lines: ['Epoch 3/3'],
      svg: '<svg xmlns="http://www.w3.org/2000/svg"><text>loss</text></svg>',
      problem: null,
      done: true
    });
    expect(node.querySelector('.tfc-JobOutput-returned')?.textContent).toBe(
      back
    );
    expect(node.querySelector('.tfc-JobOutput-hint')).toBeNull();
    const img = node.querySelector<HTMLImageElement>('.tfc-JobOutput-plot');
    expect(img?.getAttribute('src')).toMatch(
      /^data:image\/svg\+xml;charset=utf-8,%3Csvg/
    );
  });

  it('says the names are gone when the kernel that set them restarted since', () => {
    const node = document.createElement('div');
    const back = 'Back in the kernel: model, history.';
    const view = (gone: boolean) => ({
      id: ID,
      job: { ...ended(), returned: back, returned_gone: gone },
      lines: ['Epoch 3/3'],
      problem: null,
      done: true
    });
    renderView(node, view(false)); // the kernel that set them runs: they are there
    expect(node.querySelector('.tfc-JobOutput-returned')?.textContent).toBe(
      back
    );
    renderView(node, view(true)); // restarted since: gone, and how to bring them back
    expect(node.querySelector('.tfc-JobOutput-returned')).toBeNull();
    expect(node.querySelector('.tfc-JobOutput-hint')?.textContent).toBe(
      restartedHint(ID)
    );
    expect(restartedHint(ID)).toContain(`%tfc_attach ${ID}`);
  });

  it("says a failed job's error, and a problem reaching it", () => {
    const node = document.createElement('div');
    renderView(node, {
      id: ID,
      job: { ...ended('failed'), error: 'chief exited with status 1' },
      lines: null,
      problem: 'cannot reach the job: boom (trying again)',
      done: false
    });
    expect(node.textContent).toContain(
      'failed after 17 s (chief exited with status 1)'
    );
    expect(node.querySelector('.tfc-JobOutput-problem')?.textContent).toContain(
      'boom'
    );
    renderView(node, {
      id: ID,
      job: null,
      lines: null,
      problem: null,
      done: false
    });
    expect(node.dataset.state).toBe('unknown');
    expect(node.textContent).toContain(ID);
  });
});

describe('restorable', () => {
  const root = '/srv/root';
  const path = 'work/ticks.ipynb';
  const savedAt = 1_999_999_000 * 1000;
  const cells = [
    { id: 'cell-1', jobs: [] },
    { id: 'cell-2', jobs: ['old-job'] }
  ];

  it("puts a cell back on the job it launched since the file's save", () => {
    const older = job({ id: 'second-newest', created_at: 1_999_999_500 });
    expect(restorable(cells, [job(), older], path, root, savedAt)).toEqual(
      new Map([['cell-2', ID]])
    );
  });

  it('leaves the cells whose saved outputs are of their job', () => {
    const saved = [{ id: 'cell-2', jobs: [ID] }];
    expect(restorable(saved, [job()], path, root, savedAt).size).toBe(0);
  });

  it('puts back a cell whose job ended after the autosave that cut its outputs', () => {
    const saved = [{ id: 'cell-2', jobs: ['old-job', ID] }];
    const cut = ended(); // created before the save (2_000_000_000), ended after it
    const at = (2_000_000_010 * 1000) as number;
    expect(restorable(saved, [cut], path, root, at)).toEqual(
      new Map([['cell-2', ID]])
    );
    expect(
      restorable(saved, [cut], path, root, 2_000_000_020 * 1000).size
    ).toBe(0);
    expect(restorable(saved, [job()], path, root, at).size).toBe(0); // still running
  });

  it("never takes another notebook's, another cell's or an older job", () => {
    for (const other of [
      job({ notebook: '/srv/root/other.ipynb' }),
      job({ notebook: '/elsewhere/work/ticks.ipynb' }),
      job({ notebook: null }),
      job({ cell_id: 'cell-9' }),
      job({ cell_id: null }),
      job({ created_at: 1_999_998_000 })
    ]) {
      expect(restorable(cells, [other], path, root, savedAt).size).toBe(0);
    }
  });
});
