/**
 * The extension's icon.
 */
import { LabIcon } from '@jupyterlab/ui-components';

const ROCKET = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
<path class="jp-icon3" fill="#616161" d="M12 2c3.3 1.6 5 4.9 5 9.2l2.2 2.6c.3.4.3.9 0 1.3L17 18h-2.2l-.8 2h-4l-.8-2H7l-2.2-2.9c-.3-.4-.3-.9 0-1.3L7 11.2C7 6.9 8.7 3.6 12 2zm0 6.2a1.8 1.8 0 1 0 0 3.6 1.8 1.8 0 0 0 0-3.6zM10.5 21h3l-1.5 2z"/>
</svg>`;

/** A rocket: launch a job; the jobs sidebar. */
export const tfcIcon = new LabIcon({
  name: 'tfc-jupyter:rocket',
  svgstr: ROCKET
});
