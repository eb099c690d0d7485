import React from 'react';

import { JobState } from '../types';

/** A job's state as a coloured label. */
export function StateBadge(props: { state: JobState }): JSX.Element {
  return (
    <span
      className={`tfc-StateBadge tfc-state-${props.state}`}
      data-state={props.state}
    >
      {props.state}
    </span>
  );
}
