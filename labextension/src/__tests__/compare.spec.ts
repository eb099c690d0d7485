/**
 * src/compare.ts: several jobs' curves of one metric, and the options they differ in.
 */
import {
  codeLines,
  diffHunks,
  diffLines,
  differingOptions,
  notebookLine,
  shown,
  extent,
  polylines,
  seriesOf,
  sharedMetrics
} from '../compare';
import { IJob, IMetrics, MetricValue } from '../types';
import { makeJob } from './jobfixture';

function job(id: string, spec: { [key: string]: unknown }): IJob {
  return makeJob({ id, name: id.split('-')[0], spec });
}

function metrics(
  id: string,
  rows: { [name: string]: MetricValue }[]
): IMetrics {
  return {
    job_id: id,
    state: 'succeeded',
    terminal: true,
    names: [...new Set(rows.flatMap(r => Object.keys(r)))],
    epochs: rows.map((m, i) => ({
      fit: 0,
      epoch: i + 1,
      time: null,
      metrics: m
    })),
    last: rows[rows.length - 1] ?? null,
    flags: [],
    model_dir: null,
    svg: null
  };
}

describe('sharedMetrics', () => {
  it('offers what every job reported, the loss first', () => {
    const a = metrics('a', [{ accuracy: 0.5, loss: 1, val_loss: 2 }]);
    const b = metrics('b', [{ loss: 1, accuracy: 0.4, auc: 0.9 }]);
    expect(sharedMetrics([a, b])).toEqual(['loss', 'accuracy']);
    expect(sharedMetrics([])).toEqual([]);
  });
});

describe('seriesOf and polylines', () => {
  it('overlays each job on one scale, breaking a curve where it is not a number', () => {
    const jobs = [job('fast-1-aaaaaa', {}), job('slow-1-bbbbbb', {})];
    const runs = [
      metrics('a', [{ loss: 4 }, { loss: 2 }, { loss: 'NaN' }, { loss: 0 }]),
      metrics('b', [{ loss: 4 }, { loss: 3 }])
    ];
    const series = seriesOf(jobs, runs, 'loss');
    expect(series.map(s => s.label)).toEqual([
      'fast · aaaaaa',
      'slow · bbbbbb'
    ]);
    expect(series[0].values).toEqual([4, 2, null, 0]);
    expect(extent(series)).toEqual([0, 4]);
    const lines = polylines(series, 300, 100);
    // one scale for both: x by epoch over the longest run, y from 4 (top) to 0 (bottom)
    expect(lines[0].runs).toEqual(['0.0,0.0 100.0,50.0', '300.0,100.0']);
    expect(lines[1].runs).toEqual(['0.0,0.0 100.0,25.0']);
  });

  it('draws a flat curve mid-box, and nothing for no value', () => {
    const flat = seriesOf(
      [job('a-1-aaaaaa', {})],
      [metrics('a', [{ loss: 1 }, { loss: 1 }])],
      'loss'
    );
    expect(polylines(flat, 10, 10)[0].runs).toEqual(['0.0,5.0 10.0,5.0']);
    const none = seriesOf(
      [job('a-1-aaaaaa', {})],
      [metrics('a', [{ acc: 1 }])],
      'loss'
    );
    expect(polylines(none, 10, 10)[0].runs).toEqual([]);
    expect(extent(none)).toBeNull();
  });
});

describe('differingOptions', () => {
  it('lists each option whose values differ, with every value', () => {
    const a = job('a-1-aaaaaa', {
      worker_count: 0,
      entry_args: ['--lr=0.1'],
      google: { region: 'us-central1', scheduling: 'standard' },
      decided: { strategy: 'none', strategy_reason: 'one device' },
      name: 'a'
    });
    const b = {
      ...job('b-1-bbbbbb', {
        worker_count: 2,
        entry_args: ['--lr=0.01'],
        google: { region: 'us-central1', scheduling: 'spot' },
        decided: { strategy: 'multi_worker_mirrored', strategy_reason: 'x' },
        name: 'b'
      }),
      backend: 'docker'
    };
    // The Google Cloud part's settings are options like the others; what planning decided
    // from the code is not an option.
    expect(differingOptions([a, b])).toEqual([
      { name: 'backend', values: ['local', 'docker'] },
      { name: 'entry_args', values: ['--lr=0.1', '--lr=0.01'] },
      { name: 'scheduling', values: ['standard', 'spot'] },
      { name: 'worker_count', values: ['0', '2'] }
    ]);
    expect(differingOptions([a, { ...a, id: 'c' }])).toEqual([]);
  });
});

describe('what differs first', () => {
  it('names each notebook, or the one they share', () => {
    const a = { ...job('a-1-aaaaaa', {}), notebook: 'x/train.ipynb' };
    const b = { ...job('b-1-bbbbbb', {}), notebook: 'y/eval.ipynb' };
    expect(notebookLine([a, b])).toEqual({
      same: false,
      text: 'Different notebooks: train.ipynb (a) vs eval.ipynb (b)'
    });
    // two folders' notebooks of one name are told apart by their paths
    const c = { ...b, notebook: 'y/train.ipynb' };
    expect(notebookLine([a, c]).text).toBe(
      'Different notebooks: x/train.ipynb (a) vs y/train.ipynb (b)'
    );
    expect(notebookLine([a, { ...a, id: 'c' }])).toEqual({
      same: true,
      text: 'Same notebook: x/train.ipynb'
    });
  });

  it('shows options as flags write them, labels as k=v', () => {
    expect(shown({ team: 'ml', run: 'b' })).toBe('team=ml, run=b');
    expect(shown(['--lr=0.1', '--epochs=2'])).toBe('--lr=0.1 --epochs=2');
    expect(shown(3)).toBe('3');
    expect(shown({})).toBe('—');
    expect(shown(null)).toBe('—');
  });

  it('diffs the cells, changed lines with their context', () => {
    const code = (rate: string) => ({
      job_id: 'j',
      notebook: null,
      cells: [
        { cell: 0, source: 'import os\n' },
        { cell: 2, source: `a = 1\nb = 2\nc = 3\nrate = ${rate}\nfit()` }
      ],
      script: null,
      missing: null
    });
    const a = codeLines(code('0.1'));
    expect(a).toEqual([
      '# cell 0',
      'import os',
      '# cell 2',
      'a = 1',
      'b = 2',
      'c = 3',
      'rate = 0.1',
      'fit()'
    ]);
    const diff = diffLines(a, codeLines(code('0.5')));
    expect(diff.filter(d => d.op !== ' ')).toEqual([
      { op: '-', text: 'rate = 0.1' },
      { op: '+', text: 'rate = 0.5' }
    ]);
    expect(diffHunks(diff, 1)).toEqual([
      null,
      { op: ' ', text: 'c = 3' },
      { op: '-', text: 'rate = 0.1' },
      { op: '+', text: 'rate = 0.5' },
      { op: ' ', text: 'fit()' }
    ]);
    expect(diffHunks(diffLines(a, a))).toEqual([]);
    expect(codeLines({ ...code('1'), cells: [], script: 'x = 1\n' })).toEqual([
      'x = 1'
    ]);
  });
});
