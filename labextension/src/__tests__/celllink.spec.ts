/**
 * src/celllink.ts: the link to where a job failed, from the kernel's output and from the job's
 * record (the job view's "Go to cell"), and which cell it selects.
 */
import { cellIndex, linkOf, linkOfLocation } from '../celllink';

describe('linkOfLocation', () => {
  it("reads a job's error_location as the cell's output gives it", () => {
    expect(linkOfLocation('cell 7, line 3')).toEqual({
      cell: 7,
      line: 3,
      code: '',
      text: 'cell 7, line 3'
    });
    expect(linkOfLocation('cell 2, line 1', 'x = 1 / 0')).toEqual(
      linkOf({
        version: 1,
        cell: 2,
        line: 1,
        code: 'x = 1 / 0',
        text: 'cell 2, line 1'
      })
    );
  });

  it('is null for a location that is no notebook cell', () => {
    for (const location of [
      null,
      undefined,
      '',
      'line 3',
      'train.py, line 3',
      'cell 0, line 3',
      'cell 2, line 0',
      'cell two, line 3'
    ]) {
      expect(linkOfLocation(location)).toBeNull();
    }
  });
});

describe('cellIndex', () => {
  const sources = ['import os', 'x = 1\ny = 1 / 0', '%%tfc_run\nprint(y)'];

  it('finds the cell by its number while its line reads as saved', () => {
    const link = linkOfLocation('cell 2, line 2', 'y = 1 / 0');
    expect(link && cellIndex(link, sources)).toBe(1);
  });

  it('finds a cell moved since by its line', () => {
    const link = linkOfLocation('cell 2, line 2', 'y = 1 / 0');
    expect(link && cellIndex(link, ['# new', ...sources])).toBe(2);
  });

  it('goes by the number when the line is not known', () => {
    const link = linkOfLocation('cell 3, line 1');
    expect(link && cellIndex(link, ['# new', ...sources])).toBe(2);
  });
});
