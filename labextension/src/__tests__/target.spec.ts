/**
 * src/target.ts: what a launch sends for a notebook and for a Python script, and the script's
 * command line in the plan preview.
 */
import {
  defaultRunCell,
  hasUnsavedCells,
  isRunCell,
  isScriptPath,
  jobRequest,
  runCells,
  scriptCommand,
  shellQuote,
  withoutOutputs
} from '../target';

const NOTEBOOK = {
  nbformat: 4,
  nbformat_minor: 5,
  metadata: {},
  cells: [{ cell_type: 'code', source: '%%tfc_run\nprint(1)', outputs: [] }]
};

describe('isScriptPath', () => {
  it('is true for .py paths only, as the server decides', () => {
    expect(isScriptPath('train.py')).toBe(true);
    expect(isScriptPath('dir/sub dir/train.py')).toBe(true);
    expect(isScriptPath('ui.ipynb')).toBe(false);
    expect(isScriptPath('train.pyc')).toBe(false);
    expect(isScriptPath('train.py.txt')).toBe(false);
    expect(isScriptPath('README.md')).toBe(false);
  });
});

describe('jobRequest', () => {
  it("sends a notebook's live model, never a source", () => {
    const body = jobRequest(
      {
        kind: 'notebook',
        path: 'dir/ui.ipynb',
        dirty: true,
        notebook: NOTEBOOK
      },
      { dry_run: true },
      false
    );
    expect(body).toEqual({
      path: 'dir/ui.ipynb',
      notebook: NOTEBOOK,
      dirty: true,
      options: { dry_run: true },
      replace: false
    });
    expect('source' in body).toBe(false);
    expect('cell' in body).toBe(false);
  });

  it("sends a script's text as source, with no notebook or cell", () => {
    const options = { backend: 'local', args: '--epochs 3 --name "a b"' };
    const body = jobRequest(
      {
        kind: 'script',
        path: 'dir/train.py',
        dirty: true,
        source: 'import sys\nprint(sys.argv)\n'
      },
      options,
      true
    );
    expect(body).toEqual({
      path: 'dir/train.py',
      source: 'import sys\nprint(sys.argv)\n',
      dirty: true,
      options,
      replace: true
    });
    expect(Object.keys(body).sort()).toEqual([
      'dirty',
      'options',
      'path',
      'replace',
      'source'
    ]);
    // as JSON too: no notebook/cell member at all (the server refuses them for a script)
    const json = JSON.parse(JSON.stringify(body));
    expect(json.notebook).toBeUndefined();
    expect(json.cell).toBeUndefined();
  });

  it('sends an empty script as an empty source, not as the saved file', () => {
    const body = jobRequest(
      { kind: 'script', path: 'empty.py', dirty: false, source: '' },
      {},
      true
    );
    expect(body.source).toBe('');
  });

  it('leaves the source out when the saved script is what runs', () => {
    const body = jobRequest(
      { kind: 'script', path: 'train.py', dirty: true, source: null },
      {},
      true
    );
    expect(body).toEqual({
      path: 'train.py',
      dirty: true,
      options: {},
      replace: true
    });
  });
});

describe('withoutOutputs', () => {
  it("drops code cells' outputs and counts, keeps the rest", () => {
    const content = {
      ...NOTEBOOK,
      cells: [
        {
          cell_type: 'code',
          source: 'x',
          outputs: [{ output_type: 'stream', text: 'big' }],
          execution_count: 7,
          metadata: { tags: ['a'] }
        },
        { cell_type: 'markdown', source: '# t', metadata: {} }
      ]
    };
    expect(withoutOutputs(content)).toEqual({
      ...NOTEBOOK,
      cells: [
        {
          cell_type: 'code',
          source: 'x',
          outputs: [],
          execution_count: null,
          metadata: { tags: ['a'] }
        },
        { cell_type: 'markdown', source: '# t', metadata: {} }
      ]
    });
    expect(content.cells[0].outputs).toHaveLength(1); // the model's copy is untouched
  });

  it('gives a notebook without cells an empty list', () => {
    expect(withoutOutputs({ nbformat: 4 })).toEqual({ nbformat: 4, cells: [] });
  });
});

describe('shellQuote', () => {
  it('leaves plain words as they are and quotes the rest', () => {
    expect(shellQuote('train.py')).toBe('train.py');
    expect(shellQuote('dir/train-2.py')).toBe('dir/train-2.py');
    expect(shellQuote('my train.py')).toBe("'my train.py'");
    expect(shellQuote("it's.py")).toBe("'it'\"'\"'s.py'");
    expect(shellQuote('')).toBe("''");
  });
});

describe('scriptCommand', () => {
  it("is `tfc-jupyter run` with the script and the line's flags", () => {
    expect(scriptCommand("%%tfc_run --args '--epochs 3'", 'train.py')).toBe(
      "tfc-jupyter run train.py --args '--epochs 3'"
    );
    expect(
      scriptCommand('%%tfc_run --workers 1 --label team=ui', 'my train.py')
    ).toBe("tfc-jupyter run 'my train.py' --workers 1 --label team=ui");
  });

  it('has no flags when the line has none', () => {
    expect(scriptCommand('%%tfc_run', 'train.py')).toBe(
      'tfc-jupyter run train.py'
    );
  });
});

describe('jobRequest and the %%tfc_run cell', () => {
  const notebook = {
    kind: 'notebook' as const,
    path: 'nb.ipynb',
    dirty: false,
    notebook: NOTEBOOK
  };

  it("names a notebook's cell when one is picked", () => {
    expect(jobRequest(notebook, {}, true, 4).cell).toBe(4);
  });

  it('leaves the cell to the server when none is picked', () => {
    for (const cell of [undefined, null, 0]) {
      expect('cell' in jobRequest(notebook, {}, true, cell)).toBe(false);
    }
  });

  it('never names a cell for a script', () => {
    const body = jobRequest(
      { kind: 'script', path: 'train.py', dirty: false, source: 'x' },
      {},
      true,
      3
    );
    expect('cell' in body).toBe(false);
  });
});

describe('runCells', () => {
  const nb = {
    cells: [
      { cell_type: 'markdown', source: '%%tfc_run in markdown' },
      { cell_type: 'code', source: 'x = 1' },
      {
        cell_type: 'code',
        source: '\n%%tfc_run --workers 1\n# train\nmodel.fit(x)'
      },
      { cell_type: 'code', source: ['%%tfc_run', '\n', 'print(2)'] },
      { cell_type: 'code', source: '%%tfc_runner\nprint(3)' },
      { cell_type: 'raw', source: '%%tfc_run' },
      { cell_type: 'code', source: '  %%tfc_run --tpu v3-8' }
    ]
  };

  it('lists the %%tfc_run code cells by their 1-based position, markdown counted', () => {
    expect(runCells(nb)).toEqual([
      { number: 3, line: '%%tfc_run --workers 1', code: 'model.fit(x)' },
      { number: 4, line: '%%tfc_run', code: 'print(2)' }
    ]);
  });

  it('reads a cell as the kernel does: its first line that is not blank', () => {
    expect(isRunCell('\n\n%%tfc_run\nx')).toBe(true);
    expect(isRunCell('%%tfc_run --gpus 1')).toBe(true);
    expect(isRunCell('%%tfc_runx')).toBe(false);
    expect(isRunCell('x\n%%tfc_run')).toBe(false);
    expect(isRunCell('  %%tfc_run')).toBe(false);
    expect(isRunCell('')).toBe(false);
  });

  it('finds none in a notebook without cells', () => {
    expect(runCells({})).toEqual([]);
    expect(runCells({ cells: 'not a list' })).toEqual([]);
  });
});

describe('defaultRunCell', () => {
  const cells = [
    { number: 3, line: '%%tfc_run', code: '' },
    { number: 6, line: '%%tfc_run --workers 1', code: '' }
  ];

  it('starts from the active cell when it is a %%tfc_run cell', () => {
    expect(defaultRunCell(cells, 5)).toBe(6);
  });

  it('else from the first', () => {
    expect(defaultRunCell(cells, 0)).toBe(3);
    expect(defaultRunCell(cells, null)).toBe(3);
  });

  it('is null without %%tfc_run cells', () => {
    expect(defaultRunCell([], 0)).toBeNull();
  });
});

describe('hasUnsavedCells', () => {
  const saved = {
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3' } },
    cells: [
      { cell_type: 'code', source: ['x = 1\n', 'y = 2'], metadata: {} },
      {
        cell_type: 'code',
        source: '%%tfc_run\nprint(x)',
        metadata: { tags: ['a'] }
      }
    ]
  };
  const live = {
    metadata: {
      kernelspec: { name: 'python3', display_name: 'Python 3 (ipykernel)' },
      language_info: { name: 'python', version: '3.11.7' }
    },
    cells: [
      {
        cell_type: 'code',
        id: 'c1',
        source: 'x = 1\ny = 2',
        metadata: { trusted: true },
        outputs: [],
        execution_count: null
      },
      {
        cell_type: 'code',
        id: 'c2',
        source: '%%tfc_run\nprint(x)',
        metadata: { tags: ['a'], collapsed: false },
        outputs: [],
        execution_count: 3
      }
    ]
  };

  it('ignores what the kernel fills in on opening: metadata, ids, outputs', () => {
    expect(hasUnsavedCells(live, saved)).toBe(false);
  });

  it("counts an edit of a cell's text", () => {
    const edited = {
      ...live,
      cells: [{ ...live.cells[0], source: 'x = 41\ny = 2' }, live.cells[1]]
    };
    expect(hasUnsavedCells(edited, saved)).toBe(true);
  });

  it('counts a cell added, removed, moved, retyped or retagged', () => {
    const [a, b] = live.cells;
    expect(hasUnsavedCells({ cells: [a, b, a] }, saved)).toBe(true);
    expect(hasUnsavedCells({ cells: [a] }, saved)).toBe(true);
    expect(hasUnsavedCells({ cells: [b, a] }, saved)).toBe(true);
    expect(
      hasUnsavedCells({ cells: [{ ...a, cell_type: 'markdown' }, b] }, saved)
    ).toBe(true);
    expect(
      hasUnsavedCells(
        { cells: [a, { ...b, metadata: { tags: ['tfc-skip'] } }] },
        saved
      )
    ).toBe(true);
  });
});
