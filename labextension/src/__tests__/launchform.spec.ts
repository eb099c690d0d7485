/**
 * src/components/LaunchForm.tsx and PlanPreview.tsx, rendered to HTML: the wording for a
 * notebook (its %%tfc_run cell) and for a Python script (no cells, its arguments, the command).
 */
import React from 'react';

import {
  applyFix,
  cellLabel,
  choiceDetails,
  cellOf,
  emptyValue,
  fromOptions,
  toOptions,
  ILaunchFormProps,
  ILaunchValues,
  LaunchForm,
  strategyLabel
} from '../components/LaunchForm';
import { PlanPreview } from '../components/PlanPreview';
import {
  IDefaults,
  IFix,
  IFormField,
  IJobOptions,
  IMachines,
  IPlan
} from '../types';

// react-dom has no types installed here: its server renderer, typed by hand.
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { renderToStaticMarkup } = require('react-dom/server') as {
  renderToStaticMarkup: (element: React.ReactElement) => string;
};
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { createRoot } = require('react-dom/client') as {
  createRoot: (node: Element) => {
    render: (element: React.ReactElement) => void;
    unmount: () => void;
  };
};
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { act } = require('react-dom/test-utils') as {
  act: (work: () => void | Promise<void>) => Promise<void>;
};

/** The fields GET /defaults serves, from the option table (tests/test_fields.py keeps this
 * file equal to what the server sends). */
// eslint-disable-next-line @typescript-eslint/no-var-requires
const FIELDS = require('./fields.json') as IFormField[];
const DEFAULTS: IDefaults = {
  version: '0.1.0',
  settings: { machine: { value: 'CPU', source: 'default' } },
  backends: ['local', 'docker', 'vertex'],
  strategies: ['auto', 'none'],
  options: [],
  fields: FIELDS
};
const MACHINES: IMachines = {
  machines: [],
  gpu_types: [],
  tpu_types: [],
  prices_as_of: '2026-11',
  pricing_url: ''
};
const VALUES = {
  backend: 'local',
  machine: '',
  workers: '0',
  gpus: '',
  gpu_type: '',
  tpu: '',
  strategy: 'auto',
  region: '',
  project: '',
  name: '',
  label: '',
  args: '--epochs 3'
};

function plan(overrides: Partial<IPlan> = {}): IPlan {
  return {
    notebook: '/root/train.py',
    found_by: "the editor's text",
    source: 'the script as open in the editor',
    cells: [1],
    skipped_cells: [],
    strategy: 'none',
    cost_per_hour: 0.2185,
    cost_text: 'cost: nothing billed (it runs on this machine)',
    requirements: [],
    warnings: [],
    notes: [],
    spec: {
      backend: 'local',
      worker_count: 0,
      chief: {
        name: 'CPU',
        machine_type: 'n1-standard-4',
        accelerator_type: null,
        accelerator_count: 0,
        price_per_hour: 0.2185,
        tpu_topology: null,
        description: ''
      }
    },
    options: { args: '--epochs 3' },
    line: "%%tfc_run --args '--epochs 3'",
    refused: null,
    ...overrides
  };
}

function form(props: Partial<ILaunchFormProps>): string {
  return renderToStaticMarkup(
    React.createElement(LaunchForm, {
      documentName: 'ui.ipynb',
      dirty: true,
      defaults: DEFAULTS,
      machines: MACHINES,
      initial: VALUES,
      onChange: () => undefined,
      preview: async () => plan(),
      ...props
    })
  );
}

/** Run `work` on a React root mounted in the document, with fake timers (the form's check
 * waits before it asks); the root is unmounted and the timers are real again after it. */
async function mounted(
  work: (
    root: ReturnType<typeof createRoot>,
    container: HTMLElement
  ) => Promise<void>
): Promise<void> {
  // React's act() outside a test renderer: say this is a test environment
  (
    globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }
  ).IS_REACT_ACT_ENVIRONMENT = true;
  const container = document.createElement('div');
  document.body.appendChild(container);
  const root = createRoot(container);
  jest.useFakeTimers();
  try {
    await work(root, container);
  } finally {
    jest.useRealTimers();
    await act(async () => root.unmount());
    container.remove();
  }
}

/** The text of some HTML, tags left out. */
function text(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&#x27;/g, "'")
    .replace(/&quot;/g, '"');
}

describe('LaunchForm', () => {
  it("names a notebook's %%tfc_run line", () => {
    const html = text(form({ kind: 'notebook' }));
    expect(html).toContain('Runs ui.ipynb as it is in the editor now');
    expect(html).toContain('including its unsaved edits');
    expect(html).toContain('%%tfc_run');
    expect(html).toContain('Script arguments');
  });

  it("keeps a notebook's fields in their order, arguments last", () => {
    const html = form({ kind: 'notebook' });
    expect(html.indexOf('name="args"')).toBeGreaterThan(
      html.indexOf('name="label"')
    );
  });

  it('is a notebook by default', () => {
    expect(text(form({}))).toContain('%%tfc_run');
  });

  it('names the script, with no cell or %%tfc_run wording', () => {
    const html = form({ kind: 'script', documentName: 'train.py' });
    const words = text(html);
    expect(words).toContain('Runs the script train.py as it is in the editor');
    expect(words).toContain('including its unsaved edits');
    expect(words).toContain('sys.argv');
    expect(words).not.toContain('%%tfc_run');
    expect(words).not.toMatch(/\bcell/);
    // the script's arguments are there, first, with the form's value
    expect(html).toMatch(/<input name="args"[^>]*value="--epochs 3"/);
    expect(html.indexOf('name="args"')).toBeLessThan(
      html.indexOf('name="backend"')
    );
    expect(html).toContain('placeholder="the script&#x27;s name"');
  });

  it('says when the saved script runs, not the editor', () => {
    const words = text(
      form({ kind: 'script', documentName: 'nb.py', live: false })
    );
    expect(words).toContain('Runs the script nb.py as saved');
    expect(words).toContain('its unsaved edits are not sent');
  });
});

describe('PlanPreview', () => {
  it("shows a notebook's cells and its cell line", () => {
    const words = text(
      renderToStaticMarkup(
        React.createElement(PlanPreview, {
          plan: plan({
            cells: [1, 3],
            found_by: 'live notebook model',
            source: 'the notebook as open in the editor',
            line: '%%tfc_run --workers 1'
          })
        })
      )
    );
    expect(words).toContain('cells 1, 3');
    expect(words).toContain('as a cell: %%tfc_run --workers 1');
    // a local job is priced in its own words, never as a Vertex AI job
    expect(words).toContain('nothing billed (it runs on this machine)');
    expect(words).not.toContain('Vertex AI');
  });

  it('prices a Vertex AI job as its server line says', () => {
    const words = text(
      renderToStaticMarkup(
        React.createElement(PlanPreview, {
          plan: plan({ cost_text: 'cost: about $0.22/h (pool 0: $0.22/h)' })
        })
      )
    );
    expect(words).toContain('about $0.22/h (pool 0: $0.22/h)');
  });

  it("shows a script's name and its command, no cells", () => {
    const words = text(
      renderToStaticMarkup(
        React.createElement(PlanPreview, { plan: plan(), script: 'train.py' })
      )
    );
    expect(words).toContain(
      'script train.py · the script as open in the editor'
    );
    expect(words).toContain(
      "as a command: tfc-jupyter run train.py --args '--epochs 3'"
    );
    expect(words).not.toContain('%%tfc_run');
    expect(words).not.toMatch(/\bcells?\b/);
  });
});

describe('the strategy choice', () => {
  it("says auto is the code's own decision, not tfc.run's rules", () => {
    expect(strategyLabel('auto')).toBe('auto (the code decides)');
    expect(strategyLabel('mirrored')).toBe('mirrored');
    const html = form({});
    expect(html).toContain(
      '<option value="auto" selected="">auto (the code decides)</option>'
    );
    expect(html).not.toContain('tfc.run');
  });
});

const CELLS = [
  { number: 2, line: '%%tfc_run --workers 1', code: 'model.fit(x, y)' },
  { number: 5, line: '%%tfc_run --gpus 1', code: 'train()' }
];

describe('the %%tfc_run cell choice', () => {
  it('is offered when the notebook has several %%tfc_run cells', () => {
    const html = form({ cells: CELLS, initial: { ...VALUES, cell: '5' } });
    expect(html).toMatch(/<select name="cell">/);
    expect(text(html)).toContain(
      'cell 2: %%tfc_run --workers 1 · model.fit(x, y)'
    );
    expect(html).toContain('<option value="5" selected="">');
    expect(text(html)).toContain(
      "The form starts from the chosen cell's %%tfc_run line"
    );
  });

  it('is not offered for one cell, or for a script', () => {
    expect(form({ cells: CELLS.slice(0, 1) })).not.toContain('name="cell"');
    expect(form({ kind: 'script', cells: CELLS })).not.toContain('name="cell"');
  });

  it('labels a cell by its line and first code, cut when long', () => {
    expect(cellLabel(CELLS[1])).toBe('cell 5: %%tfc_run --gpus 1 · train()');
    expect(cellLabel({ number: 3, line: '%%tfc_run', code: '' })).toBe(
      'cell 3: %%tfc_run'
    );
    const long = cellLabel({
      number: 3,
      line: '%%tfc_run',
      code: 'x'.repeat(200)
    });
    expect(long).toHaveLength(80);
    expect(long.endsWith('…')).toBe(true);
  });

  it('is a number, or none', () => {
    expect(cellOf({ ...VALUES, cell: '5' })).toBe(5);
    expect(cellOf({ ...VALUES, cell: '' })).toBeNull();
    expect(cellOf(VALUES)).toBeNull();
    expect(cellOf({ ...VALUES, cell: '0' })).toBeNull();
  });

  it("is kept when the values are read from a cell's options", () => {
    const values = fromOptions(
      { workers: 2 },
      'local',
      { ...VALUES, cell: '5' },
      FIELDS
    );
    expect(values.cell).toBe('5');
    expect(values.workers).toBe('2');
  });

  it("starts again from the picked cell's flags, and plans that cell", async () => {
    const previews: (number | null)[] = [];
    const changes: ILaunchValues[] = [];
    const loadCell = jest.fn(async (cell: number): Promise<ILaunchValues> => ({
      ...VALUES,
      gpus: '1',
      workers: '0',
      label: `from=${cell}`
    }));
    await mounted(async (root, container) => {
      await act(async () => {
        root.render(
          React.createElement(LaunchForm, {
            documentName: 'ui.ipynb',
            dirty: false,
            defaults: DEFAULTS,
            machines: MACHINES,
            initial: { ...VALUES, workers: '1', cell: '2' },
            cells: CELLS,
            loadCell,
            onChange: values => changes.push(values),
            preview: async (_options, cell) => {
              previews.push(cell);
              return plan();
            }
          })
        );
      });
      await act(async () => {
        jest.advanceTimersByTime(1000);
      });
      expect(previews).toEqual([2]);
      const select =
        container.querySelector<HTMLSelectElement>('select[name=cell]');
      expect(select?.value).toBe('2');
      await act(async () => {
        select!.value = '5';
        select!.dispatchEvent(new Event('change', { bubbles: true }));
      });
      await act(async () => {
        jest.advanceTimersByTime(1000);
      });
      expect(loadCell).toHaveBeenCalledWith(5);
      const input = (name: string): string | undefined =>
        container.querySelector<HTMLInputElement>(`[name=${name}]`)?.value;
      expect(input('gpus')).toBe('1');
      expect(input('workers')).toBe('0');
      expect(input('label')).toBe('from=5');
      expect(
        container.querySelector<HTMLSelectElement>('select[name=cell]')?.value
      ).toBe('5');
      expect(previews[previews.length - 1]).toBe(5);
      // the dialog reads the values with the cell picked
      expect(changes[changes.length - 1]).toMatchObject({
        cell: '5',
        gpus: '1'
      });
    });
  });
});

describe('the notice of unsaved edits', () => {
  it('says nothing of unsaved edits when there are none', () => {
    const words = text(form({ dirty: false }));
    expect(words).not.toContain('unsaved');
    expect(words).toContain('Runs ui.ipynb as it is in the editor now:');
  });
});

describe('the fields, from the option table', () => {
  it('shows every field of the table with its label, by section', () => {
    const html = form({ kind: 'notebook' });
    for (const field of FIELDS) {
      expect(html).toContain(`data-field="${field.name}"`);
      expect(text(html)).toContain(field.label);
    }
    const sections = [...html.matchAll(/data-group="([^"]+)"/g)].map(m => m[1]);
    expect(sections).toEqual([...new Set(FIELDS.map(f => f.group))]);
    expect(sections).toContain('Sweep');
  });

  it('sends each value as its option takes it', () => {
    const options = toOptions(
      {
        ...VALUES,
        workers: '2',
        label: 'team=ml run=3,x=1',
        sweep: 'lr=loguniform(1e-4,1e-1); units=[64,128]',
        trials: '6',
        parallel: '2',
        metric: ' val_accuracy ',
        method: 'random'
      },
      FIELDS
    ) as { [name: string]: unknown };
    expect(options.workers).toBe(2);
    expect(options.label).toEqual(['team=ml', 'run=3', 'x=1']);
    expect(options.sweep).toEqual([
      'lr=loguniform(1e-4,1e-1)',
      'units=[64,128]'
    ]);
    expect([options.trials, options.parallel]).toEqual([6, 2]);
    expect([options.metric, options.method]).toEqual([
      'val_accuracy',
      'random'
    ]);
    // a TPU host is the whole machine
    const tpu = toOptions(
      { ...VALUES, tpu: 'v3-8', machine: 'T4_1X', gpus: '1' },
      FIELDS
    );
    expect([tpu.machine, tpu.gpus, tpu.gpu_type]).toEqual(['', 0, '']);
    // a GPU type only with GPUs; with them it is sent
    const noGpus = toOptions(
      { ...VALUES, gpu_type: 'A100', gpus: '0' },
      FIELDS
    );
    expect(noGpus.gpu_type).toBe('');
    const gpus = toOptions({ ...VALUES, gpu_type: 'A100', gpus: '2' }, FIELDS);
    expect([gpus.gpu_type, gpus.gpus]).toEqual(['A100', 2]);
  });

  it('empties a field by the rule its field carries, for any field', () => {
    // the rule is data the server sends: a backend's own field may carry one too
    const extra: IFormField[] = [
      ...FIELDS,
      {
        ...FIELDS[0],
        name: 'zone',
        kind: 'text',
        only_with: ['region'],
        only_without: ['tpu']
      }
    ];
    const base = { ...VALUES, region: 'us-central1', zone: 'b' };
    const zone = (values: typeof base): unknown =>
      (toOptions(values, extra) as { [name: string]: unknown }).zone;
    expect(zone(base)).toBe('b');
    expect(zone({ ...base, region: '' })).toBe('');
    expect(zone({ ...base, tpu: 'v3-8' })).toBe('');
  });

  it('reads a cell line back into the same fields', () => {
    const values = fromOptions(
      {
        sweep: ['lr=[0.1,0.2]', 'units=[2,4]'],
        label: ['a=1', 'b=2'],
        trials: 4
      },
      'vertex',
      VALUES,
      FIELDS
    );
    expect(values.sweep).toBe('lr=[0.1,0.2]; units=[2,4]');
    expect(values.label).toBe('a=1, b=2');
    expect(values.trials).toBe('4');
    expect(values.backend).toBe('vertex');
  });
});

describe('an optional count (no value by default)', () => {
  // as the server sends an option declared `seed: int | None = option(None, ..., label=...)`
  const workers = FIELDS.find(f => f.name === 'workers') as IFormField;
  const SEED: IFormField = {
    ...workers,
    name: 'seed',
    label: 'Seed',
    group: 'Job',
    help: "The job's random seed (default: none, each run draws its own).",
    neutral: null,
    default: '',
    placeholder: 'none: each run draws its own',
    optional: true
  };
  const fields = [...FIELDS, SEED];
  const sent = (values: ILaunchValues): unknown =>
    (toOptions({ ...VALUES, ...values }, fields) as { [name: string]: unknown })
      .seed;

  it('is the only kind of count that says so', () => {
    expect(FIELDS.filter(f => f.optional)).toEqual([]);
    expect(FIELDS.find(f => f.name === 'trials')?.optional).toBe(false);
  });

  it('starts empty, where a count starts at 0', () => {
    expect(emptyValue(SEED)).toBe('');
    expect(emptyValue(workers)).toBe('0');
    const initial: ILaunchValues = {};
    for (const field of fields) {
      initial[field.name] = emptyValue(field);
    }
    const html = form({
      defaults: { ...DEFAULTS, fields },
      initial: { ...initial, ...VALUES }
    });
    expect(html).toMatch(
      /<input name="seed" type="number" min="0" placeholder="[^"]*" value=""\/>/
    );
    expect(html).toMatch(
      /<input name="workers" type="number" min="0" value="0"/
    );
  });

  it('is sent as "" when empty (unset, over the cell\'s value), else as its number', () => {
    expect(sent({ seed: '' })).toBe('');
    expect(sent({ seed: '  ' })).toBe('');
    expect(sent({})).toBe('');
    expect(sent({ seed: ' 3 ' })).toBe(3);
    expect(sent({ seed: '0' })).toBe(0); // 0 typed is 0, not unset
    expect(sent({ seed: '2x' })).toBe('2x'); // the server's check says why, in one line
    // a count's empty box is still 0
    expect(toOptions({ ...VALUES, workers: '' }, fields).workers).toBe(0);
  });

  it('is emptied to "" by its field\'s rule, not to 0', () => {
    const tied = fields.map(f =>
      f.name === 'seed' ? { ...f, only_with: ['region'] } : f
    );
    const options = (values: ILaunchValues): unknown =>
      (toOptions({ ...VALUES, ...values }, tied) as { [name: string]: unknown })
        .seed;
    expect(options({ seed: '4', region: '' })).toBe('');
    expect(options({ seed: '4', region: 'us-central1' })).toBe(4);
  });

  it("shows the cell's value when its line sets it, else stays empty", () => {
    const fallback = { ...VALUES, seed: emptyValue(SEED) };
    expect(fromOptions({ seed: 5 }, 'local', fallback, fields).seed).toBe('5');
    expect(fromOptions({ seed: 0 }, 'local', fallback, fields).seed).toBe('0');
    expect(fromOptions({ workers: 1 }, 'local', fallback, fields).seed).toBe(
      ''
    );
  });

  it('is emptied by a fix that drops it', () => {
    const fix: IFix = {
      action: 'drop',
      option: 'seed',
      value: null,
      text: 'drop --seed',
      ui_text: 'clear Seed'
    };
    expect(applyFix({ ...VALUES, seed: 'x' }, fix, fields)?.seed).toBe('');
  });
});

describe('a fix the server gives as data', () => {
  const fix = (
    action: 'drop' | 'set',
    option: string,
    value: string | null
  ): IFix => ({
    action,
    option,
    value,
    text: action === 'drop' ? `drop --${option}` : `pass --${option} ${value}`,
    ui_text: `set ${option}`
  });

  it('is applied to the field it names, or not offered', () => {
    const values = { ...VALUES, gpus: '2', tpu: 'v3-8' };
    expect(applyFix(values, fix('drop', 'gpus', null), FIELDS)).toEqual({
      ...values,
      gpus: ''
    });
    expect(applyFix(values, fix('set', 'workers', '3'), FIELDS)).toEqual({
      ...values,
      workers: '3'
    });
    // the user picks the value, or the option has no field here: no button
    expect(applyFix(values, fix('set', 'project', null), FIELDS)).toBeNull();
    expect(applyFix(values, fix('drop', 'include', null), FIELDS)).toBeNull();
  });

  it('sets a list field to the items it gives (labels converted for Google Cloud)', () => {
    const values = { ...VALUES, backend: 'vertex', label: 'lr=0.01, Team=ML' };
    const fixed = applyFix(
      values,
      fix('set', 'label', 'lr=0_01 team=ml'),
      FIELDS
    );
    expect(fixed).not.toBeNull();
    expect(toOptions(fixed as ILaunchValues, FIELDS).label).toEqual([
      'lr=0_01',
      'team=ml'
    ]);
  });

  it('is a button under the error, and a click changes the form and checks again', async () => {
    const sent: IJobOptions[] = [];
    const refusal = {
      message: 'a TPU job runs on one TPU host and takes no extra workers',
      hint: "drop --workers (the TPU's cores are the replicas), or pass --strategy none",
      field: 'worker_count',
      ui_message: 'a TPU job runs on one TPU host and takes no extra workers',
      ui_hint:
        "set Workers to 0 (the TPU's cores are the replicas), or set Strategy to none",
      fixes: [
        {
          ...fix('drop', 'workers', null),
          ui_text: "set Workers to 0 (the TPU's cores are the replicas)"
        },
        { ...fix('set', 'strategy', 'none'), ui_text: 'set Strategy to none' },
        fix('set', 'project', null)
      ]
    };
    await mounted(async (root, container) => {
      await act(async () => {
        root.render(
          React.createElement(LaunchForm, {
            documentName: 'ui.ipynb',
            dirty: false,
            defaults: DEFAULTS,
            machines: MACHINES,
            initial: { ...VALUES, workers: '2', tpu: 'v3-8' },
            onChange: () => undefined,
            preview: async options => {
              sent.push(options);
              return options.workers ? plan({ refused: refusal }) : plan();
            }
          })
        );
      });
      await act(async () => {
        jest.advanceTimersByTime(1000);
      });
      const buttons = Array.from(
        container.querySelectorAll<HTMLButtonElement>('button.tfc-FixButton')
      );
      expect(buttons.map(b => b.textContent)).toEqual([
        "Set Workers to 0 (the TPU's cores are the replicas)",
        'Set Strategy to none'
      ]);
      await act(async () => {
        buttons[0].click();
      });
      await act(async () => {
        jest.advanceTimersByTime(1000);
      });
      expect(sent[sent.length - 1]).toMatchObject({ workers: 0, tpu: 'v3-8' });
      expect(container.querySelector('button.tfc-FixButton')).toBeNull();
      expect(container.textContent).toContain('Ready to launch');
    });
  });
});

describe('a choice too long for its column', () => {
  it('says its details under the select', () => {
    const label =
      'RTX_PRO_6000_8X · g4-standard-384 + 8 x NVIDIA_RTX_PRO_6000, 384 vCPU, 1440 GB · price not listed';
    expect(choiceDetails(label)).toBe(
      'g4-standard-384 + 8 x NVIDIA_RTX_PRO_6000, 384 vCPU, 1440 GB · price not listed'
    );
    expect(choiceDetails('default (CPU)')).toBe('');
    const html = form({ initial: { ...VALUES, machine: 'T4_1X' } });
    const hint = /data-hint="machine">([^<]*)</.exec(html);
    // its machine type, GPUs and price under the select, whose text starts with the name
    expect(hint?.[1]).toContain('1 x NVIDIA_TESLA_T4');
    expect(hint?.[1]).not.toContain('T4_1X');
    expect(html).not.toContain('data-hint="backend"'); // a label with no details: no hint
  });
});
