import React from 'react';

import { formatRate, NOT_LISTED } from '../format';
import { scriptCommand } from '../target';
import { IPlan } from '../types';

/**
 * The plan's cost in its backend's words (the server's `cost: ...` line, less its label); a
 * server without it: the Vertex AI price, so named.
 */
export function costWords(plan: IPlan): string {
  if (typeof plan.cost_text === 'string' && plan.cost_text) {
    return plan.cost_text.replace(/^cost: /, '');
  }
  return plan.cost_per_hour === null
    ? `${NOT_LISTED} on Vertex AI`
    : `about ${formatRate(plan.cost_per_hour)} on Vertex AI`;
}

/**
 * The result of a dry run: what would run, where, and what it costs. `script`: the file name of
 * the Python script the plan runs (no cells then, and the CLI command in place of the cell line).
 */
export function PlanPreview(props: {
  plan: IPlan;
  script?: string;
}): JSX.Element {
  const { plan, script } = props;
  const chief = plan.spec.chief;
  return (
    <div className="tfc-PlanPreview">
      <div>
        {script ? (
          <>
            script <b>{script}</b>
          </>
        ) : (
          <>
            cells {plan.cells.join(', ') || 'none'}
            {plan.skipped_cells.length
              ? ` (skipped by tag: ${plan.skipped_cells.join(', ')})`
              : ''}
          </>
        )}{' '}
        &middot; {plan.source ?? plan.found_by}
      </div>
      <div>
        {plan.spec.backend}: chief {chief.name}
        {plan.spec.worker_count
          ? ` + ${plan.spec.worker_count} worker(s)`
          : ''}{' '}
        &middot; strategy <b>{plan.strategy}</b> &middot;{' '}
        <span className="tfc-PlanCost">{costWords(plan)}</span>
      </div>
      <div>requirements: {plan.requirements.join(', ') || 'none'}</div>
      <div className="tfc-PlanLine">
        {script ? (
          <>
            as a command: <code>{scriptCommand(plan.line, script)}</code>
          </>
        ) : (
          <>
            as a cell: <code>{plan.line}</code>
          </>
        )}
      </div>
      {plan.warnings.map(w => (
        <div key={w} className="tfc-Warning">
          {w}
        </div>
      ))}
    </div>
  );
}
