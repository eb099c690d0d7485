/**
 * A sweep's parallel coordinates: one vertical axis per swept variable and one for the metric,
 * each trial a line across them coloured by its metric; and the importance bars' lengths.
 */
import { ISweep } from './types';

type Value = number | string | boolean | null | undefined;

/** One axis: where a value sits on it (0 bottom .. 1 top) and its labels. */
export interface IAxis {
  name: string;
  kind: 'linear' | 'log' | 'choice';
  at: (value: Value) => number | null;
  labels: { text: string; at: number }[];
}

function numeric(values: Value[]): values is number[] {
  return values.every(v => typeof v === 'number' && Number.isFinite(v));
}

/** The axis of `name` over the values the trials took: numbers on a linear scale (a log one
 * when they are positive and span over 100x), anything else as evenly spaced choices. */
export function axisOf(
  name: string,
  values: Value[],
  format: (x: number) => string
): IAxis {
  const present = values.filter(v => v !== null && v !== undefined);
  if (present.length && numeric(present)) {
    let low = Math.min(...present);
    const high = Math.max(...present);
    const log = low > 0 && high / low > 100;
    const f = (x: number): number => (log ? Math.log10(x) : x);
    const span = f(high) - f(low);
    const at = (v: Value): number | null =>
      typeof v === 'number' && Number.isFinite(v) && (!log || v > 0)
        ? span > 0
          ? (f(v) - f(low)) / span
          : 0.5
        : null;
    if (span <= 0) {
      low = high;
    }
    const labels =
      span > 0
        ? [
            { text: format(low), at: 0 },
            { text: format(high), at: 1 }
          ]
        : [{ text: format(high), at: 0.5 }];
    return { name, kind: log ? 'log' : 'linear', at, labels };
  }
  const choices = [...new Set(present.map(v => String(v)))].sort();
  const at = (v: Value): number | null => {
    const i = v === null || v === undefined ? -1 : choices.indexOf(String(v));
    return i < 0 ? null : choices.length > 1 ? i / (choices.length - 1) : 0.5;
  };
  return {
    name,
    kind: 'choice',
    at,
    labels: choices.map(c => ({ text: c, at: at(c) ?? 0.5 }))
  };
}

/** A colour for `t` in 0..1 (0: the worst metric, 1: the best), 3:1 on white and on #111. */
export function metricColor(t: number): string {
  const stops = [
    [68, 114, 196],
    [142, 96, 180],
    [214, 39, 40]
  ];
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const mix = stops[i].map((c, k) => Math.round(c + (stops[i + 1][k] - c) * f));
  return `rgb(${mix.join(', ')})`;
}

/** One trial's line: its points in the box, its state and metric, its colour. */
export interface IParallelLine {
  number: number;
  state: string;
  metric: number | null;
  points: string;
  color: string | null;
}

/** The axes (the swept variables, then the metric) and each trial's line in a `width` x
 * `height` box; a trial without a metric (failed, pruned, running) crosses the variables'
 * axes only, uncoloured. */
export function parallelLayout(
  sweep: ISweep,
  width: number,
  height: number,
  format: (x: number) => string
): { axes: (IAxis & { x: number })[]; lines: IParallelLine[] } {
  const names = [...sweep.names, sweep.metric];
  const valueOf = (t: ISweep['trials'][number], n: string, i: number): Value =>
    i < sweep.names.length ? t.values[n] : t.metric;
  const axes = names.map((n, i) => ({
    ...axisOf(
      n,
      sweep.trials.map(t => valueOf(t, n, i)),
      format
    ),
    x: names.length > 1 ? (width * i) / (names.length - 1) : width / 2
  }));
  const metricAxis = axes[axes.length - 1];
  const lines = sweep.trials.map(t => {
    const scored = typeof t.metric === 'number' && Number.isFinite(t.metric);
    const points = axes
      .slice(0, scored ? axes.length : axes.length - 1)
      .map((a, i) => {
        const at = a.at(valueOf(t, a.name, i));
        return at === null
          ? null
          : `${a.x.toFixed(1)},${(height * (1 - at)).toFixed(1)}`;
      })
      .filter((p): p is string => p !== null);
    const height01 = scored ? (metricAxis.at(t.metric) ?? 0.5) : null;
    const goodness =
      height01 === null ? null : sweep.goal === 'max' ? height01 : 1 - height01;
    return {
      number: t.number,
      state: t.state,
      metric: scored ? (t.metric as number) : null,
      points: points.join(' '),
      color: goodness === null ? null : metricColor(goodness)
    };
  });
  return { axes, lines };
}

/** The importance bars: each variable's share, the largest first. */
export function importanceBars(
  values: { [name: string]: number } | null | undefined
): { name: string; share: number }[] {
  return Object.entries(values ?? {})
    .map(([name, share]) => ({
      name,
      share: Number.isFinite(share) ? share : 0
    }))
    .sort((a, b) => b.share - a.share || a.name.localeCompare(b.name));
}
