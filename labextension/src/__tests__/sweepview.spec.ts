/**
 * src/components/SweepView.tsx: a sweep's tab, from GET /sweeps/{id} (mocked here; the server's
 * answer is checked against a real sweep in tests/test_trials.py): the table of trials, the best
 * one marked, a trial's job opened from its row, reading again only while a trial runs.
 */
import React from 'react';

import { getSweep } from '../api';
import {
  g4,
  shownValue,
  SweepView,
  SWEEP_POLL_MS
} from '../components/SweepView';
import { ISweep } from '../types';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const { createRoot } = require('react-dom/client') as {
  createRoot: (node: Element) => {
    render: (element: React.ReactElement) => void;
    unmount: () => void;
  };
};
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { act } = require('react-dom/test-utils') as {
  act: (work: () => void | Promise<void>) => Promise<void>;
};

jest.mock('../api', () => ({ getSweep: jest.fn() }));

function sweep(running: boolean): ISweep {
  return {
    id: 'fit-3f2a9c1d0e7b',
    name: 'fit',
    metric: 'val_accuracy',
    goal: 'max',
    trials_asked: 3,
    names: ['lr', 'units'],
    summary: 'sweep fit-3f2a9c1d0e7b: 3 of 3 trials (...)',
    best: 1,
    trials: [
      {
        number: 0,
        values: { lr: 0.000123456, units: 16 },
        state: 'failed',
        metric: null,
        seconds: 4.2,
        job_id: 'fit-trial-0-20261127-180000-a1b2c3',
        note: 'ValueError: bad batch'
      },
      {
        number: 1,
        values: { lr: 0.01, units: 64 },
        state: 'succeeded',
        metric: 0.91,
        seconds: 65,
        job_id: 'fit-trial-1-20261127-180000-d4e5f6',
        note: ''
      },
      {
        number: 2,
        values: { lr: 0.3, units: 8 },
        state: running ? 'running' : 'succeeded',
        metric: 0.5,
        seconds: running ? null : 30,
        job_id: 'fit-trial-2-20261127-180001-0a9b8c',
        note: ''
      }
    ],
    svg: '<svg xmlns="http://www.w3.org/2000/svg"></svg>',
    importance: {
      by: 'trials',
      how: "the trials' values and metrics",
      values: { units: 0.3, lr: 0.7 },
      pruned: []
    }
  };
}

describe('SweepView', () => {
  it('shows the trials, the best marked, and opens a trial job', async () => {
    (
      globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }
    ).IS_REACT_ACT_ENVIRONMENT = true;
    const read = getSweep as jest.Mock;
    read.mockResolvedValue(sweep(true));
    const opened: string[] = [];
    const container = document.createElement('div');
    document.body.appendChild(container);
    const root = createRoot(container);
    jest.useFakeTimers();
    try {
      await act(async () => {
        root.render(
          React.createElement(SweepView, {
            sweepId: 'fit-3f2a9c1d0e7b',
            onOpenJob: (id: string) => opened.push(id)
          })
        );
      });
      const rows = Array.from(container.querySelectorAll('tbody tr'));
      expect(rows.map(r => r.getAttribute('data-trial'))).toEqual([
        '0',
        '1',
        '2'
      ]);
      const head = Array.from(container.querySelectorAll('th')).map(
        th => th.textContent
      );
      expect(head).toEqual([
        '#',
        'lr',
        'units',
        'state',
        'val_accuracy',
        'time',
        'job'
      ]);
      expect(rows[1].className).toBe('tfc-SweepView-best');
      expect(rows[1].textContent).toContain('succeeded (best)');
      expect(rows[0].getAttribute('title')).toBe('ValueError: bad batch');
      expect(rows[0].textContent).toContain('0.0001235');
      expect(container.textContent).toContain(
        'Trials are ranked by the highest val_accuracy.'
      );
      // parallel coordinates: a coloured line per trial with a metric, the failed one dashed
      const scored = container.querySelectorAll('polyline.tfc-Parallel-line');
      expect(Array.from(scored).map(l => l.getAttribute('data-trial'))).toEqual(
        ['1', '2']
      );
      const dashed = container.querySelector('polyline.tfc-Parallel-unscored');
      expect(dashed?.getAttribute('data-state')).toBe('failed');
      expect(dashed?.getAttribute('points')?.split(' ').length).toBe(2); // lr, units
      const axes = container.querySelectorAll('.tfc-Parallel-axis');
      expect(Array.from(axes).map(a => a.getAttribute('data-axis'))).toEqual([
        'lr',
        'units',
        'val_accuracy'
      ]);
      const bars = container.querySelectorAll('.tfc-Importance-bar');
      expect(Array.from(bars).map(b => b.getAttribute('data-param'))).toEqual([
        'lr',
        'units'
      ]);
      const img = container.querySelector('img.tfc-SweepView-plot');
      expect(img?.getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
      rows[1].querySelector('button')?.click();
      expect(opened).toEqual(['fit-trial-1-20261127-180000-d4e5f6']);
      // A trial runs: read again; once none runs, no more reads.
      read.mockResolvedValue(sweep(false));
      await act(async () => {
        await jest.advanceTimersByTimeAsync(SWEEP_POLL_MS);
      });
      expect(read).toHaveBeenCalledTimes(2);
      await act(async () => {
        await jest.advanceTimersByTimeAsync(5 * SWEEP_POLL_MS);
      });
      expect(read).toHaveBeenCalledTimes(2);
    } finally {
      jest.useRealTimers();
      await act(async () => root.unmount());
      container.remove();
    }
  });

  it("writes numbers as Python's .4g does (cases Python wrote)", () => {
    // [x, f"{x:.4g}"] from CPython, random magnitudes from 1e-7 to 1e7 among them; an exact
    // binary tie (1234.5) rounds half-even in Python and half-up in JavaScript: left out.
    const cases: [number, string][] = [
      [0.01, '0.01'],
      [0.000123456, '0.0001235'],
      [1e-5, '1e-05'],
      [99999.0, '1e+05'],
      [12345.678, '1.235e+04'],
      [0.5, '0.5'],
      [3.0, '3'],
      [9.99995e-5, '0.0001'],
      [0.00099995, '0.001'],
      [-0.0025, '-0.0025'],
      [1e20, '1e+20'],
      [2.5e-7, '2.5e-07'],
      [0.30000000000000004, '0.3'],
      [100.0, '100'],
      [0.0, '0'],
      [1862580.4856903618, '1.863e+06'],
      [129.74260769405225, '129.7'],
      [-31465.894910635063, '-3.147e+04'],
      [-0.0131717911740122, '-0.01317'],
      [-544323.2487639902, '-5.443e+05'],
      [-3.349185622514804e-7, '-3.349e-07'],
      [0.07151713681707926, '0.07152'],
      [-1.8620107621625028e-6, '-1.862e-06'],
      [6.722751915312206e-7, '6.723e-07'],
      [-1837789.6861905677, '-1.838e+06'],
      [-12.007187172902041, '-12.01'],
      [4.945957582613945e-7, '4.946e-07'],
      [-4.4890818978398776e-7, '-4.489e-07'],
      [-0.0011337831769310455, '-0.001134'],
      [-3.71195239159671, '-3.712'],
      [6.9759262118265335, '6.976'],
      [-2.771915418603618e-6, '-2.772e-06'],
      [-0.01635180118824338, '-0.01635'],
      [-7.9644557531292515, '-7.964'],
      [-0.8908466098025885, '-0.8908'],
      [7606.814921507251, '7607'],
      [15.771249020935139, '15.77'],
      [0.01153859641250965, '0.01154'],
      [-13222.474596665497, '-1.322e+04']
    ];
    for (const [x, written] of cases) {
      expect([x, g4(x)]).toEqual([x, written]);
    }
  });

  it('shows values as the cell does', () => {
    expect(shownValue(64)).toBe('64');
    expect(shownValue(0.000123456)).toBe('0.0001235');
    expect(shownValue('relu')).toBe('relu');
    expect(shownValue(true)).toBe('true');
    expect(shownValue(undefined)).toBe('');
  });
});
