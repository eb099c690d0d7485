import React from 'react';

import { ENABLE_COMMAND } from '../request';

/** What the sidebar shows when the server has no tfc_jupyter extension. */
export function ServerMissing(): JSX.Element {
  return (
    <div className="tfc-ServerMissing">
      <p>
        <b>The tfc_jupyter server extension is not enabled</b> on this Jupyter
        server, so jobs cannot be listed or launched from here.
      </p>
      <p>Enable it, then restart JupyterLab:</p>
      <pre className="tfc-Command">{ENABLE_COMMAND}</pre>
      <p>
        Check with <code>jupyter server extension list</code>.
      </p>
    </div>
  );
}
