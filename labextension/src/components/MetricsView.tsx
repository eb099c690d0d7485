import React, { useMemo } from 'react';

import { formatMetrics } from '../format';
import { IMetrics, MetricValue } from '../types';

/** A data: URL of an SVG text (UTF-8, base64): shown by an <img>, never parsed into the page. */
export function svgDataUrl(svg: string): string {
  const bytes = new TextEncoder().encode(svg);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return `data:image/svg+xml;base64,${btoa(binary)}`;
}

/**
 * The chief's training curves (the server draws them as SVG) and its last metrics, as text; the
 * store refreshes them while the job runs. Nothing is shown before the first epoch.
 */
export function MetricsView(props: {
  metrics: IMetrics | null;
  last: { [name: string]: MetricValue } | null | undefined;
}): JSX.Element | null {
  const { metrics } = props;
  const svg = metrics?.svg ?? null;
  const src = useMemo(() => (svg ? svgDataUrl(svg) : null), [svg]);
  const last = metrics?.last ?? props.last ?? null;
  if (!src && !last) {
    return null;
  }
  const epochs = metrics?.epochs ?? [];
  const final = epochs.length ? epochs[epochs.length - 1] : null;
  return (
    <div className="tfc-Metrics">
      {src ? (
        <img
          className="tfc-MetricsPlot"
          src={src}
          alt={`training curves: ${(metrics?.names ?? []).join(', ')}`}
        />
      ) : null}
      {last ? (
        <div className="tfc-MetricsLast">
          <div className="tfc-MetricsLast-title">
            {final ? `epoch ${final.epoch}` : 'last epoch'}
            {metrics && !metrics.terminal ? ' (training)' : ''}
          </div>
          <div className="tfc-MetricsLast-values">{formatMetrics(last)}</div>
          {metrics?.flags?.map(flag => (
            <div key={flag} className="tfc-MetricsLast-flag">
              ⚠ {flag}
            </div>
          ))}
          {metrics?.model_dir ? (
            <div
              className="tfc-Muted tfc-MetricsLast-model"
              title="the model's folder"
            >
              <code>{metrics.model_dir}</code>
            </div>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}
