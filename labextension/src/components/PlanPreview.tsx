import React from 'react';

import { formatRate, NOT_LISTED } from '../format';
import { IPlan } from '../types';

/** The result of a dry run: what would run, where, and what it costs. */
export function PlanPreview(props: { plan: IPlan }): JSX.Element {
  const { plan } = props;
  const chief = plan.spec.chief;
  return (
    <div className="tfc-PlanPreview">
      <div>
        cells {plan.cells.join(', ') || 'none'}
        {plan.skipped_cells.length
          ? ` (skipped by tag: ${plan.skipped_cells.join(', ')})`
          : ''}{' '}
        &middot; found by {plan.found_by}
      </div>
      <div>
        {plan.spec.backend}: chief {chief.name}
        {plan.spec.worker_count
          ? ` + ${plan.spec.worker_count} worker(s)`
          : ''}{' '}
        &middot; strategy <b>{plan.strategy}</b> &middot;{' '}
        {plan.cost_per_hour === null
          ? `${NOT_LISTED} on Vertex AI`
          : `about ${formatRate(plan.cost_per_hour)} on Vertex AI`}
      </div>
      <div>requirements: {plan.requirements.join(', ') || 'none'}</div>
      <div className="tfc-PlanLine">
        as a cell: <code>{plan.line}</code>
      </div>
      {plan.warnings.map(w => (
        <div key={w} className="tfc-Warning">
          {w}
        </div>
      ))}
    </div>
  );
}
