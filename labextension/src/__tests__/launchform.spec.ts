/**
 * src/components/LaunchForm.tsx and PlanPreview.tsx, rendered to HTML: the wording for a
 * notebook (its %%tfc_run cell) and for a Python script (no cells, its arguments, the command).
 */
import React from 'react';

import { LaunchForm, ILaunchFormProps } from '../components/LaunchForm';
import { PlanPreview } from '../components/PlanPreview';
import { IDefaults, IMachines, IPlan } from '../types';

// react-dom has no types installed here: its server renderer, typed by hand.
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { renderToStaticMarkup } = require('react-dom/server') as {
  renderToStaticMarkup: (element: React.ReactElement) => string;
};

const DEFAULTS: IDefaults = {
  version: '0.1.0',
  settings: { machine: { value: 'CPU', source: 'default' } },
  backends: ['local', 'docker', 'vertex'],
  strategies: ['auto', 'none'],
  options: []
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
  labels: '',
  args: '--epochs 3'
};

function plan(overrides: Partial<IPlan> = {}): IPlan {
  return {
    notebook: '/root/train.py',
    found_by: "the editor's text",
    cells: [1],
    skipped_cells: [],
    strategy: 'none',
    cost_per_hour: 0.2185,
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
      html.indexOf('name="labels"')
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
            line: '%%tfc_run --workers 1'
          })
        })
      )
    );
    expect(words).toContain('cells 1, 3');
    expect(words).toContain('as a cell: %%tfc_run --workers 1');
  });

  it("shows a script's name and its command, no cells", () => {
    const words = text(
      renderToStaticMarkup(
        React.createElement(PlanPreview, { plan: plan(), script: 'train.py' })
      )
    );
    expect(words).toContain("script train.py · found by the editor's text");
    expect(words).toContain(
      "as a command: tfc-jupyter run train.py --args '--epochs 3'"
    );
    expect(words).not.toContain('%%tfc_run');
    expect(words).not.toMatch(/\bcells?\b/);
  });
});
