/**
 * Lumino widgets that host the React components.
 */
import { Dialog, ReactWidget } from '@jupyterlab/apputils';
import React from 'react';

import { ICellLink } from './celllink';
import { CompareView } from './components/CompareView';
import { JobDetail } from './components/JobDetail';
import {
  ILaunchFormProps,
  ILaunchValues,
  LaunchForm
} from './components/LaunchForm';
import { IJobsPanelProps, JobsPanel } from './components/JobsPanel';
import { SweepView } from './components/SweepView';
import { jobTitle, shortId } from './format';
import { JobStore } from './store';
import { isScriptPath } from './target';
import { IJob } from './types';

/** The left sidebar of jobs. */
export class JobsSidebar extends ReactWidget {
  constructor(private readonly props: IJobsPanelProps) {
    super();
    this.addClass('tfc-Sidebar');
  }

  protected render(): JSX.Element {
    return <JobsPanel {...this.props} />;
  }
}

/**
 * The content of a job's main-area tab. Its title is the job's name and short id (`quickstart ·
 * a1b2c3`), its tooltip the full id, both kept from the store (the tab's host copies them).
 */
export class JobDetailWidget extends ReactWidget {
  private readonly unsubscribe: () => void;

  constructor(
    readonly jobId: string,
    private readonly store: JobStore,
    private readonly onGoToCell?: (job: IJob, link: ICellLink) => void
  ) {
    super();
    this.addClass('tfc-JobDetailWidget');
    this.title.label = `job · ${shortId(jobId)}`;
    this.title.caption = jobId;
    this.unsubscribe = store.subscribe(() => this.updateTitle());
    this.updateTitle();
  }

  dispose(): void {
    if (!this.isDisposed) {
      this.unsubscribe();
    }
    super.dispose();
  }

  private updateTitle(): void {
    const job = this.store.job(this.jobId);
    if (!job) {
      return;
    }
    const label = jobTitle(job);
    const caption = `${job.name} (${job.state})\nid ${job.id}${job.notebook ? `\n${isScriptPath(job.notebook) ? 'script' : 'notebook'} ${job.notebook}` : ''}`;
    if (this.title.label !== label) {
      this.title.label = label;
    }
    if (this.title.caption !== caption) {
      this.title.caption = caption;
    }
  }

  protected render(): JSX.Element {
    return (
      <JobDetail
        jobId={this.jobId}
        store={this.store}
        onGoToCell={this.onGoToCell}
      />
    );
  }
}

/** A main-area tab comparing jobs (their curves overlaid, the options they differ in). */
export class CompareWidget extends ReactWidget {
  constructor(
    readonly ids: string[],
    private readonly store: JobStore
  ) {
    super();
    this.addClass('tfc-CompareWidget');
    this.title.label = `Compare ${ids.length} jobs`;
    this.title.caption = ids.join('\n');
  }

  protected render(): JSX.Element {
    return <CompareView ids={this.ids} store={this.store} />;
  }
}

/** A sweep's main-area tab: its trials' table and plot. */
export class SweepWidget extends ReactWidget {
  constructor(
    readonly sweepId: string,
    private readonly onOpenJob: (jobId: string) => void
  ) {
    super();
    this.addClass('tfc-SweepWidget');
    this.title.label = `Sweep ${sweepId.slice(0, 24)}`;
    this.title.caption = `sweep ${sweepId}`;
  }

  protected render(): JSX.Element {
    return <SweepView sweepId={this.sweepId} onOpenJob={this.onOpenJob} />;
  }
}

/** The launch form as a dialog body; the dialog's value is the form's values. */
export class LaunchDialogBody
  extends ReactWidget
  implements Dialog.IBodyWidget<ILaunchValues>
{
  private values: ILaunchValues;
  /** Whether the choices, as last checked, make a job (Launch is enabled only then). */
  ok = false;

  constructor(
    private readonly props: Omit<ILaunchFormProps, 'onChange' | 'onValidity'>
  ) {
    super();
    this.values = props.initial;
    this.addClass('tfc-LaunchDialogBody');
  }

  getValue(): ILaunchValues {
    return this.values;
  }

  /** Enable or disable the dialog's Launch button. */
  private setValidity(ok: boolean): void {
    this.ok = ok;
    const accept = this.node
      .closest('.jp-Dialog')
      ?.querySelector<HTMLButtonElement>('.jp-mod-accept');
    if (accept) {
      accept.disabled = !ok;
    }
  }

  protected onAfterAttach(msg: any): void {
    super.onAfterAttach(msg);
    this.setValidity(this.ok);
  }

  protected render(): JSX.Element {
    return (
      <LaunchForm
        {...this.props}
        onChange={values => (this.values = values)}
        onValidity={ok => this.setValidity(ok)}
      />
    );
  }
}
