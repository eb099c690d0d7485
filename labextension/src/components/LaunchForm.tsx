import React, { useEffect, useRef, useState } from 'react';

import { TfcApiError } from '../request';
import { IDefaults, IJobOptions, IMachines, IPlan } from '../types';
import { PlanPreview } from './PlanPreview';

/** The form's values, as strings (empty: not set). */
export interface ILaunchValues {
  backend: string;
  machine: string;
  workers: string;
  gpus: string;
  gpu_type: string;
  tpu: string;
  strategy: string;
  region: string;
  project: string;
  name: string;
  labels: string;
  args: string;
}

/** The job options the form's values stand for (only what is set). */
export function toOptions(values: ILaunchValues): IJobOptions {
  const options: IJobOptions = { backend: values.backend, strategy: values.strategy };
  const workers = parseInt(values.workers, 10);
  if (workers > 0) {
    options.workers = workers;
  }
  if (values.tpu) {
    options.tpu = values.tpu;
  } else {
    const gpus = parseInt(values.gpus, 10);
    if (gpus > 0) {
      options.gpus = gpus;
      if (values.gpu_type) {
        options.gpu_type = values.gpu_type;
      }
    }
    if (values.machine) {
      options.machine = values.machine;
    }
  }
  for (const key of ['region', 'project', 'name', 'args'] as const) {
    if (values[key].trim()) {
      options[key] = values[key].trim();
    }
  }
  const labels = values.labels
    .split(/[,\s]+/)
    .map(l => l.trim())
    .filter(Boolean);
  if (labels.length) {
    options.label = labels;
  }
  return options;
}

/** Props of {@link LaunchForm}. */
export interface ILaunchFormProps {
  notebookName: string;
  dirty: boolean;
  defaults: IDefaults;
  machines: IMachines;
  initial: ILaunchValues;
  /** Called with every change, so the dialog can read the values. */
  onChange: (values: ILaunchValues) => void;
  /** Plans the job without launching it. */
  preview: (options: IJobOptions) => Promise<IPlan>;
}

/** Where and how to run the notebook: backend, machines, workers, strategy ... and a dry run. */
export function LaunchForm(props: ILaunchFormProps): JSX.Element {
  const [values, setValues] = useState<ILaunchValues>(props.initial);
  const [plan, setPlan] = useState<IPlan | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const result = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (result.current && typeof result.current.scrollIntoView === 'function') {
      result.current.scrollIntoView({ block: 'nearest' });
    }
  }, [plan, error]);

  const set = (key: keyof ILaunchValues) => (
    event: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>
  ) => {
    const next = { ...values, [key]: event.target.value };
    setValues(next);
    setPlan(null);
    props.onChange(next);
  };
  const onPreview = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      setPlan(await props.preview(toOptions(values)));
    } catch (e) {
      setPlan(null);
      setError(e instanceof TfcApiError ? e.text : String(e));
    } finally {
      setBusy(false);
    }
  };
  const defaultMachine = String(props.defaults.settings.machine?.value ?? 'CPU');
  return (
    <div className="tfc-LaunchForm">
      <p className="tfc-LiveNotice">
        Runs <b>{props.notebookName}</b> as it is in the editor now
        {props.dirty ? ', including its unsaved edits' : ''}: the notebook's content is sent
        with the launch, saved or not. Values here replace the flags of its{' '}
        <code>%%tfc_run</code> line.
      </p>
      <div className="tfc-FormGrid">
        <label>
          Backend
          <select name="backend" value={values.backend} onChange={set('backend')}>
            {props.defaults.backends.map(b => (
              <option key={b} value={b}>
                {b}
              </option>
            ))}
          </select>
        </label>
        <label>
          Chief machine
          <select name="machine" value={values.machine} onChange={set('machine')}>
            <option value="">default ({defaultMachine})</option>
            {props.machines.machines.map(m => (
              <option key={m.name} value={m.name} title={m.description}>
                {m.name} (${m.price_per_hour.toFixed(2)}/h)
              </option>
            ))}
          </select>
        </label>
        <label>
          Workers
          <input name="workers" type="number" min={0} value={values.workers} onChange={set('workers')} />
        </label>
        <label>
          GPUs per machine
          <input name="gpus" type="number" min={0} value={values.gpus} onChange={set('gpus')} />
        </label>
        <label>
          GPU type
          <select name="gpu_type" value={values.gpu_type} onChange={set('gpu_type')}>
            <option value="">default</option>
            {props.machines.gpu_types.map(g => (
              <option key={g} value={g}>
                {g}
              </option>
            ))}
          </select>
        </label>
        <label>
          TPU
          <select name="tpu" value={values.tpu} onChange={set('tpu')}>
            <option value="">none</option>
            {props.machines.tpu_types.map(t => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Strategy
          <select name="strategy" value={values.strategy} onChange={set('strategy')}>
            {props.defaults.strategies.map(s => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Region
          <input name="region" value={values.region} onChange={set('region')} />
        </label>
        <label>
          Project
          <input name="project" value={values.project} placeholder="Vertex AI only" onChange={set('project')} />
        </label>
        <label>
          Job name
          <input name="name" value={values.name} placeholder="the notebook's name" onChange={set('name')} />
        </label>
        <label>
          Labels
          <input name="labels" value={values.labels} placeholder="team=ml, run=3" onChange={set('labels')} />
        </label>
        <label>
          Script arguments
          <input name="args" value={values.args} placeholder="--epochs 3" onChange={set('args')} />
        </label>
      </div>
      <div className="tfc-FormActions">
        <button className="jp-Button jp-mod-styled tfc-PreviewButton" disabled={busy} onClick={onPreview}>
          {busy ? 'Planning...' : 'Preview plan (dry run)'}
        </button>
        <span className="tfc-Muted">
          prices as of {props.machines.prices_as_of}, an estimate
        </span>
      </div>
      <div ref={result}>
        {error ? <div className="tfc-Error">{error}</div> : null}
        {plan ? <PlanPreview plan={plan} /> : null}
      </div>
    </div>
  );
}
