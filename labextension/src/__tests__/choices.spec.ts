/**
 * src/choices.ts: reading the launch panel's memory and rendering it as one line.
 */
import * as fs from 'fs';
import * as path from 'path';

import type { IRenderMime } from '@jupyterlab/rendermime';

import { cellOf, choicesRendererFactory, lineOf, MIME_TYPE } from '../choices';

const LINE = '%%tfc_run --backend docker --workers 1';

/** A constant of tfc_jupyter/panel/memory.py, the kernel side that writes the bundle. */
function pythonConstant(name: string): string {
  const source = fs.readFileSync(
    path.resolve(__dirname, '../../../tfc_jupyter/panel/memory.py'),
    'utf8'
  );
  const match = new RegExp(`^${name} = (.+)$`, 'm').exec(source);
  if (!match) {
    throw new Error(`${name} is not in memory.py`);
  }
  return match[1].trim();
}

function model(data: unknown): IRenderMime.IMimeModel {
  return { data: { [MIME_TYPE]: data } } as unknown as IRenderMime.IMimeModel;
}

describe('MIME_TYPE', () => {
  it('is the MIME type and bundle version the kernel side writes', () => {
    expect(MIME_TYPE).toBe(JSON.parse(pythonConstant('MIME_TYPE')));
    expect(
      lineOf({ version: Number(pythonConstant('BUNDLE_VERSION')), line: LINE })
    ).toBe(LINE);
  });
});

describe('lineOf', () => {
  it('gives the remembered line of a version 2 bundle', () => {
    expect(lineOf({ version: 2, line: LINE, notebook: 'train.ipynb' })).toBe(
      LINE
    );
    expect(lineOf({ version: 2, line: '' })).toBe('');
  });

  it('refuses other versions', () => {
    expect(lineOf({ version: 1, line: LINE })).toBeNull();
    expect(lineOf({ version: 3, line: LINE })).toBeNull();
    expect(lineOf({ version: '2', line: LINE })).toBeNull();
    expect(lineOf({ line: LINE })).toBeNull();
  });

  it('refuses a line that is not text', () => {
    expect(lineOf({ version: 2 })).toBeNull();
    expect(lineOf({ version: 2, line: null })).toBeNull();
    expect(lineOf({ version: 2, line: ['%%tfc_run'] })).toBeNull();
  });

  it('refuses anything but an object', () => {
    for (const data of [undefined, null, 2, LINE, [2, LINE], true]) {
      expect(lineOf(data)).toBeNull();
    }
  });
});

describe('choicesRendererFactory', () => {
  it('renders text only, for the panel MIME type', () => {
    expect(choicesRendererFactory.safe).toBe(true);
    expect(choicesRendererFactory.mimeTypes).toEqual([MIME_TYPE]);
    expect(choicesRendererFactory.defaultRank).toBe(40);
  });

  it('shows the remembered line as one dim line', async () => {
    const renderer = choicesRendererFactory.createRenderer(
      {} as IRenderMime.IRendererOptions
    );
    expect(renderer.hasClass('tfc-PanelChoices')).toBe(true);
    await renderer.renderModel(model({ version: 2, line: LINE }));
    expect(renderer.node.textContent).toBe(
      `Launch panel: ${LINE} (remembered in this output, saved with the notebook)`
    );
    expect(renderer.node.title).toBe(
      "tfc_jupyter's launch panel remembers its choices in this output"
    );
    expect(renderer.node.children).toHaveLength(0);
    renderer.dispose();
  });

  it('names the %%tfc_run cell picked, in a notebook with several', async () => {
    const renderer = choicesRendererFactory.createRenderer(
      {} as IRenderMime.IRendererOptions
    );
    await renderer.renderModel(model({ version: 2, line: LINE, cell: 4 }));
    expect(renderer.node.textContent).toBe(
      `Launch panel: ${LINE} on cell 4 (remembered in this output, saved with the notebook)`
    );
    renderer.dispose();
  });

  it('shows nothing for a bundle it does not understand, or an empty line', async () => {
    const renderer = choicesRendererFactory.createRenderer(
      {} as IRenderMime.IRendererOptions
    );
    await renderer.renderModel(model({ version: 2, line: LINE }));
    await renderer.renderModel(model({ version: 1, line: LINE }));
    expect(renderer.node.textContent).toBe('');
    await renderer.renderModel(model({ version: 2, line: '' }));
    expect(renderer.node.textContent).toBe('');
    renderer.dispose();
  });

  it('does not read the line as HTML', async () => {
    const renderer = choicesRendererFactory.createRenderer(
      {} as IRenderMime.IRendererOptions
    );
    await renderer.renderModel(
      model({
        version: 2,
        line: '%%tfc_run --name <img src=x onerror=alert(1)>'
      })
    );
    expect(renderer.node.querySelector('img')).toBeNull();
    expect(renderer.node.textContent).toContain('<img src=x onerror=alert(1)>');
    renderer.dispose();
  });
});

describe('cellOf', () => {
  it('gives the cell a bundle with a line names', () => {
    expect(cellOf({ version: 2, line: LINE, cell: 4 })).toBe(4);
    expect(cellOf({ version: 2, line: LINE })).toBeNull();
  });

  it('refuses a cell that is no position, or a bundle it does not understand', () => {
    for (const cell of [0, -1, 1.5, '4', null, true]) {
      expect(cellOf({ version: 2, line: LINE, cell })).toBeNull();
    }
    expect(cellOf({ version: 1, line: LINE, cell: 4 })).toBeNull();
    expect(cellOf(null)).toBeNull();
  });
});
