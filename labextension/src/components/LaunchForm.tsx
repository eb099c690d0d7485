import React, { useEffect, useRef, useState } from 'react';

import { formatRate } from '../format';
import { errorText, TfcApiError } from '../request';
import { IRunCell, LaunchKind } from '../target';
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
  /**
   * The `%%tfc_run` cell to run: its 1-based position among the notebook's cells, as text
   * ("" or absent: the server's choice, the first). Not a job option: it picks what runs.
   */
  cell?: string;
}

/** The strategy choices' labels: `auto` is the code's own choice (see the README). */
export function strategyLabel(strategy: string): string {
  return strategy === 'auto' ? 'auto (the code decides)' : strategy;
}

/** The `%%tfc_run` cell the values pick (null: none picked, the server's default). */
export function cellOf(values: ILaunchValues): number | null {
  const cell = parseInt(values.cell ?? '', 10);
  return Number.isFinite(cell) && cell > 0 ? cell : null;
}

/** A `%%tfc_run` cell as the form lists it: `cell 3: %%tfc_run --workers 1 · model.fit(...)`. */
export function cellLabel(cell: IRunCell, max = 80): string {
  const text = `cell ${cell.number}: ${cell.line}${cell.code ? ` · ${cell.code}` : ''}`;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * The job options the form's values stand for: every one of them, sent with `replace`, so what
 * the form shows is exactly what runs (a 0, an empty list or "" replaces the cell's value).
 */
export function toOptions(values: ILaunchValues): IJobOptions {
  const count = (text: string): number => Math.max(0, parseInt(text, 10) || 0);
  const tpu = values.tpu;
  return {
    backend: values.backend,
    strategy: values.strategy,
    workers: count(values.workers),
    tpu,
    machine: tpu ? '' : values.machine,
    gpus: tpu ? 0 : count(values.gpus),
    gpu_type: tpu || !count(values.gpus) ? '' : values.gpu_type,
    region: values.region.trim(),
    project: values.project.trim(),
    name: values.name.trim(),
    args: values.args.trim(),
    label: values.labels
      .split(/[,\s]+/)
      .map(l => l.trim())
      .filter(Boolean)
  };
}

/** The form's values for a plan's options (the cell's `%%tfc_run` flags), else `fallback`. */
export function fromOptions(
  options: { [key: string]: unknown },
  backend: string,
  fallback: ILaunchValues
): ILaunchValues {
  const text = (key: string, other: string): string =>
    options[key] === undefined || options[key] === null
      ? other
      : String(options[key]);
  const labels = Array.isArray(options.label)
    ? options.label.map(String).join(', ')
    : '';
  return {
    backend: backend || fallback.backend,
    machine: text('machine', fallback.machine),
    workers: text('workers', fallback.workers),
    gpus: text('gpus', fallback.gpus),
    gpu_type: text('gpu_type', fallback.gpu_type),
    tpu: text('tpu', fallback.tpu),
    strategy: text('strategy', fallback.strategy),
    region: text('region', fallback.region),
    project: text('project', fallback.project),
    name: text('name', fallback.name),
    labels: labels || fallback.labels,
    args: text('args', fallback.args),
    cell: fallback.cell
  };
}

/** How long the form waits after a change before it checks the choices (a dry run). */
export const CHECK_DELAY_MS = 350;

/** Props of {@link LaunchForm}. */
export interface ILaunchFormProps {
  /** What runs: a notebook (its `%%tfc_run` cell) or a Python script (as it is). */
  kind?: LaunchKind;
  /** The notebook's or script's file name. */
  documentName: string;
  dirty: boolean;
  /** False when the saved file runs, not the editor's content (default true). */
  live?: boolean;
  defaults: IDefaults;
  machines: IMachines;
  initial: ILaunchValues;
  /**
   * The notebook's `%%tfc_run` cells: with more than one, the form offers the choice (its
   * value is `cell`), and picking one starts the form from that cell's flags (`loadCell`).
   */
  cells?: IRunCell[];
  /** The form's values for a cell's own `%%tfc_run` flags (its dry run). */
  loadCell?: (cell: number) => Promise<ILaunchValues>;
  /** An error to show from the start (the launch that failed with these values). */
  initialError?: string | null;
  /** Called with every change, so the dialog can read the values. */
  onChange: (values: ILaunchValues) => void;
  /** Called when the choices become launchable or stop being so. */
  onValidity?: (ok: boolean) => void;
  /** Plans the job without launching it (`cell`: the `%%tfc_run` cell picked, if any). */
  preview: (options: IJobOptions, cell: number | null) => Promise<IPlan>;
}

/**
 * Where and how to run the notebook or script: backend, machines, workers, strategy ... and a
 * dry run.
 */
export function LaunchForm(props: ILaunchFormProps): JSX.Element {
  const [values, setValues] = useState<ILaunchValues>(props.initial);
  const [plan, setPlan] = useState<IPlan | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [launchError, setLaunchError] = useState<string | null>(
    props.initialError ?? null
  );
  const [checking, setChecking] = useState(true);
  const latest = useRef(0);
  const loading = useRef(0);
  const result = useRef<HTMLDivElement>(null);
  const { onValidity, preview } = props;

  // Every change is checked by the server's own dry run (the rules live there only); only the
  // answer to the latest change counts.
  useEffect(() => {
    const ticket = ++latest.current;
    setChecking(true);
    onValidity?.(false);
    const timer = setTimeout(async () => {
      let next: IPlan | null = null;
      let problem: string | null = null;
      try {
        next = await preview(toOptions(values), cellOf(values));
        if (next.refused) {
          // what Launch would meet, said now (in the UI's words when the server has them): the
          // dry run and the run give the same verdict
          problem = errorText(next.refused);
          next = null;
        }
      } catch (e) {
        problem = e instanceof TfcApiError ? e.text : String(e);
      }
      if (ticket !== latest.current) {
        return;
      }
      setPlan(next);
      setError(problem);
      setChecking(false);
      onValidity?.(next !== null);
    }, CHECK_DELAY_MS);
    return () => clearTimeout(timer);
    // Only a change of the values asks the server again: the callbacks are new at each render.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [values]);

  useEffect(() => {
    if (result.current && typeof result.current.scrollIntoView === 'function') {
      result.current.scrollIntoView({ block: 'nearest' });
    }
  }, [plan, error]);

  const change = (next: ILaunchValues): void => {
    setValues(next);
    setLaunchError(null);
    props.onChange(next);
  };
  const set =
    (key: keyof ILaunchValues) =>
    (event: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
      change({ ...values, [key]: event.target.value });
  // Another %%tfc_run cell: the form starts again from that cell's own flags.
  const pickCell = async (
    event: React.ChangeEvent<HTMLSelectElement>
  ): Promise<void> => {
    const cell = event.target.value;
    const ticket = ++loading.current;
    const picked = { ...values, cell };
    change(picked);
    const number = cellOf(picked);
    if (!props.loadCell || number === null) {
      return;
    }
    try {
      const loaded = await props.loadCell(number);
      if (ticket === loading.current) {
        change({ ...loaded, cell });
      }
    } catch {
      // the cell's line cannot make a job: its dry run says why, with these values
    }
  };
  const kind = props.kind ?? 'notebook';
  const cells = kind === 'notebook' ? (props.cells ?? []) : [];
  const defaultMachine = String(
    props.defaults.settings.machine?.value ?? 'CPU'
  );
  // A script's arguments (its sys.argv) come first, on a row of their own.
  const args = (
    <label
      className={kind === 'script' ? 'tfc-FormWide' : undefined}
      title="The job's sys.argv[1:], split as a shell splits words"
    >
      Script arguments
      <input
        name="args"
        value={values.args}
        placeholder="--epochs 3"
        onChange={set('args')}
      />
    </label>
  );
  return (
    <div className="tfc-LaunchForm">
      <LiveNotice
        kind={kind}
        name={props.documentName}
        dirty={props.dirty}
        live={props.live ?? true}
        several={cells.length > 1}
      />
      <div className="tfc-FormGrid">
        {kind === 'script' ? args : null}
        {cells.length > 1 ? (
          <label
            className="tfc-FormWide"
            title="The notebook has several %%tfc_run cells: the job is the one picked and the cells above it"
          >
            %%tfc_run cell
            <select name="cell" value={values.cell ?? ''} onChange={pickCell}>
              {cells.map(cell => (
                <option key={cell.number} value={String(cell.number)}>
                  {cellLabel(cell)}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        <label>
          Backend
          <select
            name="backend"
            value={values.backend}
            onChange={set('backend')}
          >
            {props.defaults.backends.map(b => (
              <option key={b} value={b}>
                {b}
              </option>
            ))}
          </select>
        </label>
        <label>
          Chief machine
          <select
            name="machine"
            value={values.machine}
            onChange={set('machine')}
          >
            <option value="">default ({defaultMachine})</option>
            {props.machines.machines.map(m => (
              <option key={m.name} value={m.name} title={m.description}>
                {m.name} ({formatRate(m.price_per_hour)})
              </option>
            ))}
          </select>
        </label>
        <label>
          Workers
          <input
            name="workers"
            type="number"
            min={0}
            value={values.workers}
            onChange={set('workers')}
          />
        </label>
        <label>
          GPUs per machine
          <input
            name="gpus"
            type="number"
            min={0}
            value={values.gpus}
            onChange={set('gpus')}
          />
        </label>
        <label>
          GPU type
          <select
            name="gpu_type"
            value={values.gpu_type}
            onChange={set('gpu_type')}
          >
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
          <select
            name="strategy"
            value={values.strategy}
            onChange={set('strategy')}
          >
            {props.defaults.strategies.map(s => (
              <option key={s} value={s}>
                {strategyLabel(s)}
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
          <input
            name="project"
            value={values.project}
            placeholder="Vertex AI only"
            onChange={set('project')}
          />
        </label>
        <label>
          Job name
          <input
            name="name"
            value={values.name}
            placeholder={`the ${kind}'s name`}
            onChange={set('name')}
          />
        </label>
        <label>
          Labels
          <input
            name="labels"
            value={values.labels}
            placeholder="team=ml, run=3"
            onChange={set('labels')}
          />
        </label>
        {kind === 'script' ? null : args}
      </div>
      <div className="tfc-FormActions">
        <span
          className="tfc-CheckState"
          data-state={checking ? 'checking' : error ? 'error' : 'ok'}
        >
          {checking
            ? 'Checking...'
            : error
              ? 'Cannot launch as chosen'
              : 'Ready to launch'}
        </span>
        <span className="tfc-Muted">
          prices as of {props.machines.prices_as_of}, an estimate
        </span>
      </div>
      <div ref={result}>
        {launchError ? (
          <div className="tfc-Error tfc-LaunchError">{launchError}</div>
        ) : null}
        {error ? <div className="tfc-Error">{error}</div> : null}
        {plan && !error ? (
          <PlanPreview
            plan={plan}
            script={kind === 'script' ? props.documentName : undefined}
          />
        ) : null}
      </div>
    </div>
  );
}

/** What the launch sends: the editor's content, saved or not (or the saved file). */
function LiveNotice(props: {
  kind: LaunchKind;
  name: string;
  dirty: boolean;
  live: boolean;
  /** The notebook has several `%%tfc_run` cells (the form offers the choice). */
  several?: boolean;
}): JSX.Element {
  if (props.kind === 'script') {
    return (
      <p className="tfc-LiveNotice" data-kind="script">
        {props.live ? (
          <>
            Runs the script <b>{props.name}</b> as it is in the editor now
            {props.dirty ? ', including its unsaved edits' : ''}: its text is
            sent with the launch, saved or not.
          </>
        ) : (
          <>
            Runs the script <b>{props.name}</b> as saved
            {props.dirty ? ' (its unsaved edits are not sent: save first)' : ''}
            .
          </>
        )}{' '}
        Script arguments are its <code>sys.argv</code>; what the form shows is
        what runs.
      </p>
    );
  }
  return (
    <p className="tfc-LiveNotice" data-kind="notebook">
      Runs <b>{props.name}</b> as it is in the editor now
      {props.dirty ? ', including its unsaved edits' : ''}: the notebook's
      content is sent with the launch, saved or not. The form starts from{' '}
      {props.several ? "the chosen cell's " : 'its '}
      <code>%%tfc_run</code> line; what it shows is what runs.
    </p>
  );
}
