/**
 * src/parallel.ts: a sweep's parallel coordinates (axes, lines coloured by the metric) and
 * importance bars.
 */
import { axisOf, importanceBars, metricColor } from '../parallel';

describe('axisOf', () => {
  it('puts numbers on a linear or log scale and words as evenly spaced choices', () => {
    const linear = axisOf('units', [4, 8, 16], String);
    expect(linear.kind).toBe('linear');
    expect([4, 10, 16].map(linear.at)).toEqual([0, 0.5, 1]);
    const log = axisOf('lr', [0.0001, 0.01, 0.1], String);
    expect(log.kind).toBe('log');
    expect(log.at(0.01)).toBeCloseTo(2 / 3);
    const words = axisOf('opt', ['sgd', 'adam', 'sgd', null], String);
    expect(words.labels).toEqual([
      { text: 'adam', at: 0 },
      { text: 'sgd', at: 1 }
    ]);
    expect(words.at(null)).toBeNull();
    expect(axisOf('one', [3, 3], String).at(3)).toBe(0.5);
  });
});

describe('metricColor and importanceBars', () => {
  it('colours from blue (worst) to red (best) and ranks the bars', () => {
    expect(metricColor(0)).toBe('rgb(68, 114, 196)');
    expect(metricColor(1)).toBe('rgb(214, 39, 40)');
    expect(metricColor(2)).toBe(metricColor(1));
    expect(importanceBars({ a: 0.2, b: 0.8 }).map(b => b.name)).toEqual([
      'b',
      'a'
    ]);
    expect(importanceBars(null)).toEqual([]);
  });
});
