import React, { useEffect, useRef, useState } from 'react';

import { errorText, TfcApiError } from '../request';
import { IRunCell, LaunchKind } from '../target';
import {
  IDefaults,
  IFix,
  IFormField,
  IJobOptions,
  IMachines,
  IPlan
} from '../types';
import { PlanPreview } from './PlanPreview';

/**
 * The form's values, as strings, by field name (empty: not set). `cell` is not a field: the
 * `%%tfc_run` cell to run, its 1-based position among the notebook's cells, as text ("" or
 * absent: the server's choice, the first); it picks what runs.
 */
export type ILaunchValues = { [name: string]: string };

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

/** A list field's items (its separator; a space: commas and spaces). */
export function listItems(text: string, separator: string): string[] {
  const parts =
    separator === ' ' ? text.split(/[,\s]+/) : text.split(separator);
  return parts.map(part => part.trim()).filter(Boolean);
}

/** An option with nothing in it, as the form sends it (an optional count: "", unset). */
function emptyOption(field: IFormField): unknown {
  return field.optional
    ? ''
    : field.kind === 'count'
      ? 0
      : field.kind === 'list'
        ? []
        : field.kind === 'switch'
          ? false
          : '';
}

/**
 * The job options the form's values stand for: every field, sent with `replace`, so what the
 * form shows is exactly what runs (a 0, an empty list or "" replaces the cell's value). A field
 * is emptied when one of its `only_with` fields is not set or one of its `only_without` fields
 * is (the option table's rule, as the panel applies it: a TPU host is the whole machine, no
 * chief machine or GPUs with it, and a GPU type only with GPUs).
 */
export function toOptions(
  values: ILaunchValues,
  fields: IFormField[]
): IJobOptions {
  const out: { [name: string]: unknown } = {};
  for (const field of fields) {
    const text = values[field.name] ?? '';
    if (field.optional) {
      out[field.name] = optionalCount(text);
    } else if (field.kind === 'count') {
      out[field.name] = Math.max(0, parseInt(text, 10) || 0);
    } else if (field.kind === 'list') {
      out[field.name] = listItems(text, field.separator);
    } else if (field.kind === 'switch') {
      out[field.name] = text === 'true';
    } else {
      out[field.name] = text.trim();
    }
  }
  const given = { ...out };
  for (const field of fields) {
    const unmet =
      (field.only_with ?? []).some(name => !given[name]) ||
      (field.only_without ?? []).some(name => given[name]);
    if (unmet && field.name in out) {
      out[field.name] = emptyOption(field);
    }
  }
  return out as IJobOptions;
}

/**
 * An optional count's box as the form sends it: "" (empty: unset), its number, or the text as
 * typed when it is no count (the server's check then says why, in one line).
 */
function optionalCount(text: string): number | string {
  const trimmed = text.trim();
  return /^\d+$/.test(trimmed) ? parseInt(trimmed, 10) : trimmed;
}

/** The form's values for a plan's options (the cell's `%%tfc_run` flags), else `fallback`. */
export function fromOptions(
  options: { [key: string]: unknown },
  backend: string,
  fallback: ILaunchValues,
  fields: IFormField[]
): ILaunchValues {
  const out: ILaunchValues = { ...fallback };
  for (const field of fields) {
    const value = options[field.name];
    if (value === undefined || value === null) {
      continue;
    }
    if (Array.isArray(value)) {
      const joiner = field.separator === ' ' ? ', ' : `${field.separator} `;
      const text = value.map(String).join(joiner);
      out[field.name] = text || fallback[field.name] || '';
    } else {
      out[field.name] = String(value);
    }
  }
  out.backend = backend || fallback.backend;
  return out;
}

/**
 * The value a field starts from with nothing set: the option's default (0, off, empty; an
 * optional count: empty, unset).
 */
export function emptyValue(field: IFormField): string {
  return (
    field.default || (field.kind === 'count' && !field.optional ? '0' : '')
  );
}

/**
 * The values with a fix applied (the server's data: drop an option, or set it to a value), or
 * null when the form cannot apply it: the option has no field here, or the user must pick the
 * value ("set Project").
 */
export function applyFix(
  values: ILaunchValues,
  fix: IFix,
  fields: IFormField[]
): ILaunchValues | null {
  const field = fields.find(f => f.name === fix.option);
  if (!field) {
    return null;
  }
  if (fix.action === 'drop') {
    return { ...values, [field.name]: field.default ?? '' }; // its control's "none"
  }
  return fix.value === null ? null : { ...values, [field.name]: fix.value };
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
  const [fixes, setFixes] = useState<IFix[]>([]);
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
      let offered: IFix[] = [];
      try {
        next = await preview(
          toOptions(values, props.defaults.fields ?? []),
          cellOf(values)
        );
        if (next.refused) {
          // what Launch would meet, said now (in the UI's words when the server has them): the
          // dry run and the run give the same verdict
          problem = errorText(next.refused);
          offered = next.refused.fixes ?? [];
          next = null;
        }
      } catch (e) {
        problem = e instanceof TfcApiError ? e.text : String(e);
        offered = e instanceof TfcApiError ? e.fixes : [];
      }
      if (ticket !== latest.current) {
        return;
      }
      setPlan(next);
      setError(problem);
      setFixes(offered);
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
  const fields = props.defaults.fields ?? [];
  // A script's arguments (its sys.argv) come first, on a row of their own.
  const first = kind === 'script' ? fields.filter(f => f.name === 'args') : [];
  const rest = fields.filter(f => !first.includes(f));
  const groups: [string, IFormField[]][] = [];
  for (const field of rest) {
    const last = groups[groups.length - 1];
    if (last && last[0] === field.group) {
      last[1].push(field);
    } else {
      groups.push([field.group, [field]]);
    }
  }
  const control = (field: IFormField): JSX.Element => (
    <FieldControl
      key={field.name}
      field={field}
      value={values[field.name] ?? ''}
      kind={kind}
      wide={kind === 'script' && field.name === 'args'}
      onChange={value => change({ ...values, [field.name]: value })}
    />
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
        {first.map(control)}
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
      </div>
      {groups.map(([group, members]) => (
        <fieldset key={group} className="tfc-FormGroup" data-group={group}>
          <legend>{group}</legend>
          <div className="tfc-FormGrid">{members.map(control)}</div>
        </fieldset>
      ))}
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
        {error
          ? fixes.map(fix => {
              const fixed = applyFix(values, fix, fields);
              return fixed ? (
                <button
                  key={`${fix.action} ${fix.option}`}
                  type="button"
                  className="tfc-FixButton"
                  title="Change the form this way"
                  onClick={() => change(fixed)}
                >
                  {fix.ui_text.charAt(0).toUpperCase() + fix.ui_text.slice(1)}
                </button>
              ) : null;
            })
          : null}
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

/**
 * What a choice's label says after its name, shown under its select (which fits its column and
 * shows the start): `T4_1X · n1-standard-8 + 1 x T4 · $0.73/h` -> `n1-standard-8 + 1 x T4 ·
 * $0.73/h`; empty for a label with no details.
 */
export function choiceDetails(label: string): string {
  const at = label.indexOf(' · ');
  return at < 0 ? '' : label.slice(at + 3);
}

/** One field's control, labelled with the option table's words. */
function FieldControl(props: {
  field: IFormField;
  value: string;
  kind: LaunchKind;
  wide: boolean;
  onChange: (value: string) => void;
}): JSX.Element {
  const { field, value } = props;
  const set = (
    event: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>
  ): void => props.onChange(event.target.value);
  const placeholder =
    field.name === 'name' ? `the ${props.kind}'s name` : field.placeholder;
  let input: JSX.Element;
  if (field.control === 'choice') {
    const picked = (field.choices ?? []).find(c => String(c.value) === value);
    const details = picked ? choiceDetails(picked.label) : '';
    input = (
      <>
        <select
          name={field.name}
          value={value}
          onChange={set}
          title={picked?.label}
        >
          {(field.choices ?? []).map(choice => (
            <option key={String(choice.value)} value={String(choice.value)}>
              {choice.label}
            </option>
          ))}
        </select>
        {details ? (
          <span className="tfc-FieldHint" data-hint={field.name}>
            {details}
          </span>
        ) : null}
      </>
    );
  } else if (field.control === 'switch') {
    input = (
      <input
        name={field.name}
        type="checkbox"
        checked={value === 'true'}
        onChange={event => props.onChange(String(event.target.checked))}
      />
    );
  } else {
    const list = field.control === 'suggest' ? `tfc-${field.name}-values` : '';
    input = (
      <>
        <input
          name={field.name}
          type={field.control === 'count' ? 'number' : undefined}
          min={field.control === 'count' ? 0 : undefined}
          list={list || undefined}
          value={value}
          placeholder={placeholder || undefined}
          onChange={set}
        />
        {list ? (
          <datalist id={list}>
            {(field.choices ?? []).map(choice => (
              <option key={String(choice.value)} value={String(choice.value)}>
                {choice.label}
              </option>
            ))}
          </datalist>
        ) : null}
      </>
    );
  }
  return (
    <label
      className={props.wide ? 'tfc-FormWide' : undefined}
      title={field.help}
      data-field={field.name}
    >
      {field.label}
      {input}
    </label>
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
