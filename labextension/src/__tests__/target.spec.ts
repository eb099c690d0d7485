/**
 * src/target.ts: what a launch sends for a notebook and for a Python script, and the script's
 * command line in the plan preview.
 */
import {
  isScriptPath,
  jobRequest,
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
