/**
 * Lumino widgets that host the React components.
 */
import { Dialog, ReactWidget } from '@jupyterlab/apputils';
import React from 'react';

import { JobDetail } from './components/JobDetail';
import { ILaunchFormProps, ILaunchValues, LaunchForm } from './components/LaunchForm';
import { IJobsPanelProps, JobsPanel } from './components/JobsPanel';

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

/** The content of a job's main-area tab. */
export class JobDetailWidget extends ReactWidget {
  constructor(readonly jobId: string) {
    super();
    this.addClass('tfc-JobDetailWidget');
  }

  protected render(): JSX.Element {
    return <JobDetail jobId={this.jobId} />;
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

  constructor(private readonly props: Omit<ILaunchFormProps, 'onChange' | 'onValidity'>) {
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
