/**
 * src/format.ts: the text of job rows, details and metrics.
 */
import {
  basename,
  codeAt,
  costTitle,
  failedReplica,
  formatCost,
  formatCreated,
  formatElapsed,
  formatMetric,
  formatMetrics,
  formatRate,
  formatStart,
  headlineMetric,
  jobTitle,
  lossName,
  matchesFilter,
  NOT_LISTED,
  pathUnderRoot,
  shortId
} from '../format';
import { IJob } from '../types';
import { makeJob } from './jobfixture';

/** A job record as GET /jobs gives it; `overrides` changes some members. */
function job(overrides: Partial<IJob> = {}): IJob {
  return makeJob({
    id: 'quickstart-20251123-140200-a1b2c3',
    name: 'quickstart',
    state: 'running',
    terminal: false,
    notebook: '/home/me/notebooks/Quickstart.ipynb',
    created_at: 1763906520,
    started_at: 1763906521,
    ended_at: null,
    elapsed: 42,
    cost_per_hour: 0.35,
    job_dir: '/home/me/.tfc-jupyter/jobs/quickstart-20251123-140200-a1b2c3',
    ...overrides
  });
}

/** Seconds since the epoch of a local time (formatStart shows local time). */
function localSeconds(
  ...parts: [number, number, number, number, number]
): number {
  return new Date(...parts).getTime() / 1000;
}

describe('formatElapsed', () => {
  it('counts seconds below a minute, whole seconds only', () => {
    expect(formatElapsed(0)).toBe('0 s');
    expect(formatElapsed(42)).toBe('42 s');
    expect(formatElapsed(59.99)).toBe('59 s');
  });

  it('never goes below 0 s', () => {
    expect(formatElapsed(-5)).toBe('0 s');
  });

  it('counts minutes and padded seconds below an hour', () => {
    expect(formatElapsed(60)).toBe('1 min 00 s');
    expect(formatElapsed(185)).toBe('3 min 05 s');
    expect(formatElapsed(3599)).toBe('59 min 59 s');
  });

  it('counts hours and padded minutes from an hour', () => {
    expect(formatElapsed(3600)).toBe('1 h 00 min');
    expect(formatElapsed(2 * 3600 + 7 * 60 + 59)).toBe('2 h 07 min');
    expect(formatElapsed(30 * 3600)).toBe('30 h 00 min');
  });
});

describe('formatRate', () => {
  it('gives dollars per hour, two decimals', () => {
    expect(formatRate(1.234)).toBe('$1.23/h');
    expect(formatRate(0)).toBe('$0.00/h');
    expect(formatRate(12)).toBe('$12.00/h');
  });

  it('says when a machine has no listed price', () => {
    expect(formatRate(null)).toBe(NOT_LISTED);
    expect(NOT_LISTED).toBe('price not listed');
  });
});

describe('formatCost', () => {
  it('gives the estimate in dollars for a billed job', () => {
    expect(formatCost(job({ billed: true, cost_estimate: 3.456 }))).toBe(
      '$3.46'
    );
    expect(formatCost(job({ billed: true, cost_estimate: 0 }))).toBe('$0.00');
  });

  it('says when a billed job has no estimate', () => {
    expect(formatCost(job({ billed: true, cost_estimate: null }))).toBe(
      NOT_LISTED
    );
  });

  it('says a job on this machine is free, whatever its estimate', () => {
    expect(formatCost(job({ billed: false, cost_estimate: 0 }))).toBe(
      '$0.00 local'
    );
    expect(formatCost(job({ billed: false, cost_estimate: null }))).toBe(
      '$0.00 local'
    );
  });
});

describe('costTitle', () => {
  it('explains a billed estimate', () => {
    expect(costTitle(job({ billed: true, cost_per_hour: 2.5 }))).toBe(
      'estimated from list prices: $2.50/h x elapsed time'
    );
  });

  it('explains a billed job without a list price', () => {
    expect(costTitle(job({ billed: true, cost_per_hour: null }))).toBe(
      'a machine of this job has no verified list price: see Vertex AI pricing'
    );
  });

  it('gives the Vertex AI rate of a job on this machine', () => {
    expect(costTitle(job({ billed: false, cost_per_hour: 0.35 }))).toBe(
      'runs on this machine; the same machines on Vertex AI: about $0.35/h'
    );
    expect(costTitle(job({ billed: false, cost_per_hour: null }))).toBe(
      'runs on this machine; the same machines on Vertex AI: price not listed'
    );
  });
});

describe('formatCreated', () => {
  it('reads created_at as seconds, not milliseconds', () => {
    const created = localSeconds(2025, 10, 23, 14, 2);
    expect(formatCreated(job({ created_at: created }))).toBe(
      new Date(2025, 10, 23, 14, 2).toLocaleString()
    );
  });
});

describe('formatStart', () => {
  const now = new Date(2025, 10, 23, 18, 30);

  it('gives the time alone today', () => {
    const created = localSeconds(2025, 10, 23, 14, 2);
    expect(formatStart(job({ created_at: created }), now)).toBe('14:02');
  });

  it('pads hours and minutes', () => {
    const created = localSeconds(2025, 10, 23, 0, 5);
    expect(formatStart(job({ created_at: created }), now)).toBe('00:05');
  });

  it('adds the day another day of this year', () => {
    expect(
      formatStart(job({ created_at: localSeconds(2025, 10, 22, 23, 59) }), now)
    ).toBe('Nov 22 23:59');
    expect(
      formatStart(job({ created_at: localSeconds(2025, 0, 1, 9, 7) }), now)
    ).toBe('Jan 1 09:07');
  });

  it('adds the year before this year', () => {
    expect(
      formatStart(job({ created_at: localSeconds(2024, 11, 31, 23, 0) }), now)
    ).toBe('Dec 31 2024 23:00');
  });

  it('is today for a job started now, by default', () => {
    const start = new Date();
    const text = formatStart(job({ created_at: start.getTime() / 1000 }));
    expect(text).toMatch(/^\d\d:\d\d$/);
  });
});

describe('basename', () => {
  it('gives the file name of a POSIX or Windows path', () => {
    expect(basename('/home/me/train.ipynb')).toBe('train.ipynb');
    expect(basename('C:\\Users\\me\\train.ipynb')).toBe('train.ipynb');
    expect(basename('notebooks/sub\\train.ipynb')).toBe('train.ipynb');
  });

  it('gives a bare name as it is', () => {
    expect(basename('train.ipynb')).toBe('train.ipynb');
  });

  it('gives the whole path when it ends in a separator', () => {
    expect(basename('/home/me/')).toBe('/home/me/');
    expect(basename('')).toBe('');
  });
});

describe('shortId and jobTitle', () => {
  it("takes an id's last 6 characters", () => {
    expect(shortId('quickstart-20251123-140200-a1b2c3')).toBe('a1b2c3');
    expect(shortId('abc')).toBe('abc');
  });

  it('titles a job with its name and short id', () => {
    expect(jobTitle(job())).toBe('quickstart · a1b2c3');
  });
});

describe('formatMetric', () => {
  it('keeps 3 significant digits', () => {
    expect(formatMetric(0.035149)).toBe('0.0351');
    expect(formatMetric(12.345)).toBe('12.3');
    expect(formatMetric(12345)).toBe('12300');
    expect(formatMetric(-0.98765)).toBe('-0.988');
    expect(formatMetric(2)).toBe('2');
  });

  it('writes very small and very large values as exponents', () => {
    expect(formatMetric(1.5e-5)).toBe('1.5e-5');
    expect(formatMetric(-0.000234)).toBe('-2.3e-4');
    expect(formatMetric(123456)).toBe('1.2e+5');
    expect(formatMetric(0.001)).toBe('0.001');
  });

  it('writes zero as 0', () => {
    expect(formatMetric(0)).toBe('0');
  });

  it('writes values that are not finite as NaN, inf and -inf', () => {
    expect(formatMetric(NaN)).toBe('NaN');
    expect(formatMetric(Infinity)).toBe('inf');
    expect(formatMetric(-Infinity)).toBe('-inf');
  });

  it('reads NaN and infinity as the API sends them (strings)', () => {
    expect(formatMetric('NaN')).toBe('NaN');
    expect(formatMetric('Infinity')).toBe('inf');
    expect(formatMetric('-Infinity')).toBe('-inf');
    expect(headlineMetric({ accuracy: 0.5, loss: 'NaN' })).toBe('loss NaN');
  });
});

describe('lossName', () => {
  it('prefers the Keras loss', () => {
    expect(lossName(['accuracy', 'val_loss', 'loss'])).toBe('loss');
  });

  it("takes a custom loop's training loss over held-out ones", () => {
    expect(lossName(['val_loss', 'train_loss', 'accuracy'])).toBe('train_loss');
    expect(lossName(['validation_loss', 'test_loss', 'g_loss'])).toBe('g_loss');
  });

  it('takes the first training loss by name', () => {
    expect(lossName(['val_loss', 'generator_loss', 'discriminator_loss'])).toBe(
      'discriminator_loss'
    );
  });

  it('falls back to a held-out loss', () => {
    expect(lossName(['val_loss', 'eval_loss', 'accuracy'])).toBe('eval_loss');
  });

  it('is undefined without a loss', () => {
    expect(lossName(['accuracy', 'auc'])).toBeUndefined();
    expect(lossName([])).toBeUndefined();
  });
});

describe('headlineMetric', () => {
  it('shows the loss', () => {
    expect(headlineMetric({ accuracy: 0.98, loss: 0.035149 })).toBe(
      'loss 0.0351'
    );
  });

  it('shows the first metric by name without a loss', () => {
    expect(headlineMetric({ precision: 0.5, auc: 0.91 })).toBe('auc 0.91');
  });

  it('is null without metrics', () => {
    expect(headlineMetric(null)).toBeNull();
    expect(headlineMetric(undefined)).toBeNull();
    expect(headlineMetric({})).toBeNull();
  });
});

describe('formatMetrics', () => {
  it('lists every metric, the loss first, the others by name', () => {
    expect(
      formatMetrics({ val_loss: 0.04, accuracy: 0.98, loss: 0.035, auc: 0.9 })
    ).toBe('loss 0.035 · accuracy 0.98 · auc 0.9 · val_loss 0.04');
  });

  it('is empty without metrics', () => {
    expect(formatMetrics({})).toBe('');
  });
});

describe('matchesFilter', () => {
  const running = job({
    name: 'mnist-Sweep',
    id: 'mnist-sweep-20251123-140200-ff00aa',
    notebook: '/home/me/MNIST.ipynb',
    state: 'running',
    backend: 'vertex'
  });

  it('matches every job with an empty filter', () => {
    expect(matchesFilter(running, '')).toBe(true);
    expect(matchesFilter(running, '   ')).toBe(true);
  });

  it('matches name, id, notebook, state and backend, ignoring case', () => {
    expect(matchesFilter(running, 'SWEEP')).toBe(true);
    expect(matchesFilter(running, 'ff00aa')).toBe(true);
    expect(matchesFilter(running, 'mnist.ipynb')).toBe(true);
    expect(matchesFilter(running, 'Running')).toBe(true);
    expect(matchesFilter(running, 'vertex')).toBe(true);
  });

  it('needs every word, in any order', () => {
    expect(matchesFilter(running, 'vertex  mnist\trunning')).toBe(true);
    expect(matchesFilter(running, 'vertex failed')).toBe(false);
  });

  it('does not match what a job lacks', () => {
    expect(matchesFilter(running, 'docker')).toBe(false);
    expect(matchesFilter(job({ notebook: null }), 'null')).toBe(false);
  });
});

describe('failedReplica', () => {
  const failed = (
    error: string,
    replicas = ['chief', 'worker-0', 'worker-1']
  ) => failedReplica({ state: 'failed', error, replicas });

  it('is the replica the error starts with', () => {
    expect(
      failed('worker-0 exited with status 1 at cell 2, line 3: ValueError')
    ).toBe('worker-0');
    expect(failed('chief was killed by signal 9 at cell 4, line 2')).toBe(
      'chief'
    );
  });

  it('tells worker-1 from worker-10', () => {
    expect(
      failed('worker-10 exited with status 1', [
        'chief',
        'worker-1',
        'worker-10'
      ])
    ).toBe('worker-10');
    expect(
      failed('the job stopped: worker-1 lost', [
        'chief',
        'worker-10',
        'worker-1'
      ])
    ).toBe('worker-1');
  });

  it('is null when the job did not fail, or no replica with a log is named', () => {
    expect(
      failedReplica({
        state: 'cancelled',
        error: 'worker-0 exited',
        replicas: ['chief', 'worker-0']
      })
    ).toBeNull();
    expect(failed('worker-3 exited with status 1')).toBeNull();
    expect(failed('image build failed')).toBeNull();
    expect(
      failedReplica({ state: 'failed', error: null, replicas: ['chief'] })
    ).toBeNull();
  });
});

describe('pathUnderRoot', () => {
  it("gives a notebook's path under the server's root folder", () => {
    expect(pathUnderRoot('/home/me/work/a/nb.ipynb', '/home/me/work')).toBe(
      'a/nb.ipynb'
    );
    expect(pathUnderRoot('/home/me/work/nb.ipynb', '/home/me/work/')).toBe(
      'nb.ipynb'
    );
    expect(pathUnderRoot('/srv/nb.ipynb', '/')).toBe('srv/nb.ipynb');
    expect(pathUnderRoot('C:\\Users\\me\\nb.ipynb', 'C:\\Users\\me')).toBe(
      'nb.ipynb'
    );
  });

  it('is null outside the root folder, or when the root is not known', () => {
    expect(pathUnderRoot('/home/me/workshop/nb.ipynb', '/home/me/work')).toBe(
      null
    );
    expect(pathUnderRoot('/home/me/work/../x.ipynb', '/home/me/work')).toBe(
      null
    );
    expect(pathUnderRoot('/home/me/work', '/home/me/work')).toBe(null);
    expect(pathUnderRoot('/home/me/nb.ipynb', '')).toBe(null);
    expect(pathUnderRoot('/home/me/nb.ipynb', '~/')).toBe(null);
  });
});

describe('codeAt', () => {
  const log = [
    'Epoch 1/3',
    'Traceback (most recent call last):',
    '  File "/jobs/j/script.py", line 12, in <module>   [cell 3, line 3]',
    '    model.fit(x, y, callbacks=[slow])',
    '  File "/jobs/j/script.py", line 5, in step   [cell 2, line 1]',
    '    raise ValueError("boom")',
    'ValueError: boom',
    ''
  ].join('\n');

  it("gives the text of the line the traceback marks with the job's location", () => {
    expect(codeAt(log, 'cell 2, line 1')).toBe('raise ValueError("boom")');
    expect(codeAt(log, 'cell 3, line 3')).toBe(
      'model.fit(x, y, callbacks=[slow])'
    );
  });

  it('is empty when the log does not mark it', () => {
    expect(codeAt(log, 'cell 9, line 9')).toBe('');
    expect(codeAt('[cell 2, line 1]', 'cell 2, line 1')).toBe('');
    expect(codeAt('', 'cell 2, line 1')).toBe('');
  });
});
