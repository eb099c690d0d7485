/**
 * Command ids, shared by the plugins.
 */
export namespace CommandIDs {
  /** Open the launch form for the current notebook or Python script ("Launch on ..."). */
  export const launch = 'tfc-jupyter:launch';
  /** Open one job's detail view (args: `{ id }`). */
  export const openJob = 'tfc-jupyter:open-job';
  /** Show the jobs sidebar. */
  export const showJobs = 'tfc-jupyter:show-jobs';
  /** Compare jobs: their curves overlaid and the options they differ in (args: `{ ids }`). */
  export const compareJobs = 'tfc-jupyter:compare-jobs';
  /** Open a sweep's tab: its trials' table and plot (args: `{ id }`, the sweep's id). */
  export const openSweep = 'tfc-jupyter:open-sweep';
  /** Ask the browser for desktop notifications when a job ends. */
  export const notifyDesktop = 'tfc-jupyter:notify-desktop';
}
