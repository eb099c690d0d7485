import React from 'react';

import { importanceBars, parallelLayout } from '../parallel';
import { ISweep } from '../types';
import { shownValue } from './SweepView';

const PAD_X = 70;
const PAD_TOP = 24;
const PAD_BOTTOM = 30;
const HEIGHT = 260;

/**
 * Parallel coordinates of a sweep: an axis per swept variable and one for the metric, each
 * trial with a metric a line coloured by it (the best one thicker); a failed, pruned or
 * running trial a dashed grey line across the variables' axes, marked by its state.
 */
export function ParallelView(props: { sweep: ISweep }): JSX.Element {
  const { sweep } = props;
  const axisCount = sweep.names.length + 1;
  const width = Math.max(420, 150 * axisCount);
  const inner = width - 2 * PAD_X;
  const innerHeight = HEIGHT - PAD_TOP - PAD_BOTTOM;
  const { axes, lines } = parallelLayout(sweep, inner, innerHeight, v =>
    shownValue(v)
  );
  const unscored = lines.filter(l => l.color === null);
  return (
    <figure className="tfc-Parallel">
      <svg
        className="tfc-Parallel-plot"
        width={width}
        height={HEIGHT}
        viewBox={`0 0 ${width} ${HEIGHT}`}
        role="img"
        aria-label={`each trial across ${sweep.names.join(', ')} and ${sweep.metric}`}
      >
        <g transform={`translate(${PAD_X},${PAD_TOP})`}>
          {lines.map(line =>
            line.color === null ? (
              <polyline
                key={line.number}
                className="tfc-Parallel-unscored"
                data-trial={line.number}
                data-state={line.state}
                points={line.points}
                fill="none"
                stroke="currentColor"
                strokeOpacity={0.45}
                strokeDasharray="4 3"
                strokeWidth={1.2}
              >
                <title>{`#${line.number}: ${line.state}`}</title>
              </polyline>
            ) : (
              <polyline
                key={line.number}
                className="tfc-Parallel-line"
                data-trial={line.number}
                data-state={line.state}
                data-metric={line.metric ?? undefined}
                points={line.points}
                fill="none"
                stroke={line.color}
                strokeWidth={line.number === sweep.best ? 3.2 : 1.6}
              >
                <title>{`#${line.number}: ${sweep.metric} ${shownValue(line.metric)}`}</title>
              </polyline>
            )
          )}
          {axes.map(axis => (
            <g
              key={axis.name}
              className="tfc-Parallel-axis"
              data-axis={axis.name}
            >
              <line
                x1={axis.x}
                x2={axis.x}
                y1={0}
                y2={innerHeight}
                stroke="currentColor"
                strokeOpacity={0.6}
              />
              <text
                x={axis.x}
                y={-8}
                textAnchor="middle"
                fill="currentColor"
                fontWeight="bold"
              >
                {axis.name}
                {axis.kind === 'log' ? ' (log)' : ''}
              </text>
              {axis.labels.map(label => (
                <text
                  key={label.text}
                  x={axis.x - 5}
                  y={innerHeight * (1 - label.at) + 4}
                  textAnchor="end"
                  fill="currentColor"
                  fontSize="11"
                >
                  {label.text}
                </text>
              ))}
            </g>
          ))}
        </g>
      </svg>
      <figcaption className="tfc-Muted">
        Each trial with a {sweep.metric} is a line coloured by it (red: the best
        end, blue: the worst; the best trial thicker).
        {unscored.length
          ? ` Dashed: ${unscored.map(l => `#${l.number} ${l.state}`).join(', ')}.`
          : ''}
      </figcaption>
    </figure>
  );
}

/** How much each swept variable matters to the metric: a bar each, and where it comes from. */
export function ImportanceView(props: { sweep: ISweep }): JSX.Element {
  const found = props.sweep.importance;
  const bars = importanceBars(found.values);
  if (!bars.length) {
    return (
      <p className="tfc-Muted tfc-Importance-none">
        Parameter importance: once two trials report {props.sweep.metric}.
      </p>
    );
  }
  const width = 300;
  return (
    <figure className="tfc-Importance" data-by={found.by}>
      <h3>Parameter importance</h3>
      <svg
        className="tfc-Importance-plot"
        width={width + 220}
        height={bars.length * 22 + 4}
        role="img"
        aria-label={`importance of ${bars.map(b => b.name).join(', ')}`}
      >
        {bars.map((bar, i) => (
          <g
            key={bar.name}
            className="tfc-Importance-bar"
            data-param={bar.name}
          >
            <text x={110} y={i * 22 + 15} textAnchor="end" fill="currentColor">
              {bar.name}
            </text>
            <rect
              x={118}
              y={i * 22 + 3}
              width={Math.max(1, width * bar.share)}
              height={16}
              fill="var(--jp-brand-color1)"
            />
            <text
              x={124 + Math.max(1, width * bar.share)}
              y={i * 22 + 15}
              fill="currentColor"
            >
              {bar.share.toFixed(2)}
            </text>
          </g>
        ))}
      </svg>
      <figcaption className="tfc-Muted">From {found.how}.</figcaption>
    </figure>
  );
}
