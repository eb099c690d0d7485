/**
 * tfc_jupyter's JupyterLab extension: only wires the plugins.
 */
import { cellLinkPlugin } from './plugins/celllink';
import { choicesPlugin } from './plugins/choices';
import { jobOutputPlugin } from './plugins/joboutput';
import { jobsPlugin } from './plugins/jobs';
import { launchPlugin } from './plugins/launch';

export default [
  launchPlugin,
  jobsPlugin,
  choicesPlugin,
  cellLinkPlugin,
  jobOutputPlugin
];
