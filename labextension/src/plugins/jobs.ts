/**
 * The jobs sidebar and the job detail views.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  MainAreaWidget,
  Notification,
  WidgetTracker
} from '@jupyterlab/apputils';

import { Widget } from '@lumino/widgets';

import { CommandIDs } from '../commands';
import { tfcIcon } from '../icons';
import { askDesktop, EndNotices, MissedEnds, notifyEnd } from '../notify';
import { openFailedCell } from '../opencell';
import { JobStore } from '../store';
import {
  CompareWidget,
  SweepWidget,
  JobDetailWidget,
  JobsSidebar
} from '../widgets';

/** `content` in a closable main-area tab of ours, with `id`, shown now. */
function showTab<T extends Widget>(
  app: JupyterFrontEnd,
  content: T,
  id: string
): MainAreaWidget<T> {
  const widget = new MainAreaWidget({ content });
  widget.id = id;
  widget.title.icon = tfcIcon;
  widget.title.closable = true;
  app.shell.add(widget, 'main');
  app.shell.activateById(widget.id);
  return widget;
}

/** The sidebar, the "open job" command and restoring open job tabs. */
export const jobsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tfc-jupyter:jobs',
  description:
    'A left sidebar that lists tfc_jupyter jobs, and a detail view with logs.',
  autoStart: true,
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const tracker = new WidgetTracker<MainAreaWidget<JobDetailWidget>>({
      namespace: 'tfc-jupyter-job'
    });
    // The one poller of job state: the sidebar, the detail tabs and their titles read it.
    const store = new JobStore(2000);
    // A job seen running ends: say so; a sweep's trials, once for the sweep.
    const notices = new EndNotices(
      app,
      () => store.jobs,
      job =>
        notifyEnd(
          app,
          job,
          (failed, link) => void openFailedCell(app, failed, link)
        )
    );
    store.onEnd(job => notices.ended(job));
    // A job that ended while no page was open is told when this one first lists the jobs.
    const missed = new MissedEnds(job => notices.ended(job));
    store.subscribe(() => missed.listed(store.jobs));
    store.start();
    const sidebar = new JobsSidebar({
      store,
      onOpen: job =>
        void app.commands.execute(CommandIDs.openJob, { id: job.id }),
      onLaunch: () => void app.commands.execute(CommandIDs.launch),
      onCompare: ids =>
        void app.commands.execute(CommandIDs.compareJobs, { ids }),
      onOpenSweep: id => void app.commands.execute(CommandIDs.openSweep, { id })
    });
    sidebar.id = 'tfc-jupyter-jobs';
    sidebar.title.icon = tfcIcon;
    sidebar.title.caption = 'TensorFlow jobs (tfc_jupyter)';
    app.shell.add(sidebar, 'left', { rank: 650 });

    app.commands.addCommand(CommandIDs.openJob, {
      label: args => (args.id ? `Job ${args.id}` : 'Open a tfc_jupyter job'),
      execute: args => {
        const id = String(args.id ?? '');
        const open = tracker.find(w => w.content.jobId === id);
        if (open) {
          app.shell.activateById(open.id);
          return open;
        }
        const content = new JobDetailWidget(
          id,
          store,
          (job, link) => void openFailedCell(app, job, link)
        );
        const widget = showTab(app, content, `tfc-job-${id}`);
        void tracker.add(widget);
        return widget;
      }
    });
    app.commands.addCommand(CommandIDs.openSweep, {
      label: args => (args.id ? `Sweep ${args.id}` : 'Open a sweep'),
      execute: args => {
        const id = String(args.id ?? '');
        const key = `tfc-sweep-${id}`;
        const open = Array.from(app.shell.widgets('main')).find(
          w => w.id === key
        );
        if (open) {
          app.shell.activateById(key);
          return open;
        }
        const content = new SweepWidget(
          id,
          jobId => void app.commands.execute(CommandIDs.openJob, { id: jobId })
        );
        return showTab(app, content, key);
      }
    });
    app.commands.addCommand(CommandIDs.compareJobs, {
      label: 'Compare the picked TensorFlow jobs',
      execute: args => {
        const ids = (Array.isArray(args.ids) ? args.ids : []).map(String);
        const content = new CompareWidget(ids, store);
        return showTab(app, content, `tfc-compare-${Date.now()}`);
      }
    });
    app.commands.addCommand(CommandIDs.notifyDesktop, {
      label: 'Notify me on the desktop when a TensorFlow job ends',
      execute: async () => Notification.info(await askDesktop())
    });
    palette?.addItem({
      command: CommandIDs.notifyDesktop,
      category: 'TensorFlow jobs'
    });
    app.commands.addCommand(CommandIDs.showJobs, {
      label: 'Show TensorFlow jobs',
      execute: () => app.shell.activateById(sidebar.id)
    });
    palette?.addItem({
      command: CommandIDs.showJobs,
      category: 'TensorFlow jobs'
    });
    if (restorer) {
      restorer.add(sidebar, sidebar.id);
      void restorer.restore(tracker, {
        command: CommandIDs.openJob,
        args: widget => ({ id: widget.content.jobId }),
        name: widget => widget.content.jobId
      });
    }
  }
};
