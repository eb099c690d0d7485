/**
 * src/groups.ts: the sidebar's rows (a sweep as one row with its trials) and its sections.
 */
import { groupJobs, labelOf, sections, sweepSummary, trialOf } from '../groups';
import { IJob, JobState } from '../types';
import { makeJob } from './jobfixture';

let counter = 0;

/** A job as GET /jobs gives it; a trial when `sweep` is given. */
function job(
  name: string,
  state: JobState,
  sweep?: string,
  trial?: number
): IJob {
  counter += 1;
  // As the jobs API sends a record's spec (JobSpec.to_dict): labels are an object.
  const labels: Record<string, string> = { team: 'vision' };
  if (sweep !== undefined) {
    labels['tfc-sweep'] = sweep;
    labels['tfc-trial'] = String(trial);
  }
  const terminal = !['queued', 'pending', 'running'].includes(state);
  return makeJob({
    id: `${name}-20261127-140000-${String(counter).padStart(6, '0')}`,
    name,
    state,
    terminal,
    created_at: 1795000000 - counter,
    spec: { labels }
  });
}

describe('labelOf', () => {
  it('reads a label of the spec, and nothing from odd shapes', () => {
    const j = job('a', 'running', 'sweep-1', 2);
    expect(labelOf(j, 'tfc-trial')).toBe('2');
    expect(labelOf(j, 'absent')).toBeNull();
    expect(labelOf({ ...j, spec: { labels: 'x' } }, 'team')).toBeNull();
    expect(
      labelOf({ ...j, spec: { labels: [['team', 3]] } }, 'team')
    ).toBeNull();
    expect(labelOf({ ...j, spec: {} }, 'team')).toBeNull();
    expect(labelOf({ ...j, spec: { labels: { team: 3 } } }, 'team')).toBeNull();
    expect(labelOf({ ...j, spec: { labels: null } }, 'team')).toBeNull();
  });

  it('reads the pairs an older record may hold', () => {
    const j = job('a', 'running');
    const spec = {
      labels: [
        ['tfc-sweep', 's9'],
        ['tfc-trial', '4']
      ]
    };
    expect(labelOf({ ...j, spec }, 'tfc-sweep')).toBe('s9');
    expect(labelOf({ ...j, spec }, 'tfc-trial')).toBe('4');
  });
});

describe('groupJobs', () => {
  it('makes a sweep one row where its newest trial is, its trials by number', () => {
    const newest = job('alone', 'running');
    const t2 = job('fit-trial-2', 'running', 's1', 2);
    const other = job('other', 'succeeded');
    const t0 = job('fit-trial-0', 'succeeded', 's1', 0);
    const t1 = job('fit-trial-1', 'failed', 's1', 1);
    const groups = groupJobs([newest, t2, other, t0, t1]);
    expect(groups.map(g => g.key)).toEqual([newest.id, 'sweep:s1', other.id]);
    expect(groups[1].jobs.map(j => j.name)).toEqual([
      'fit-trial-0',
      'fit-trial-1',
      'fit-trial-2'
    ]);
    expect(groups[1].running).toBe(true);
    expect(sweepSummary(groups[1])).toEqual({
      name: 'fit',
      text: '3 trials: 1 failed, 1 running, 1 succeeded'
    });
  });

  it('keeps two sweeps apart, and a sweep whose trials all ended is finished', () => {
    const groups = groupJobs([
      job('a-trial-0', 'succeeded', 'sa', 0),
      job('b-trial-0', 'running', 'sb', 0),
      job('a-trial-1', 'cancelled', 'sa', 1)
    ]);
    const { running, finished } = sections(groups);
    expect(running.map(g => g.sweep)).toEqual(['sb']);
    expect(finished.map(g => g.sweep)).toEqual(['sa']);
    expect(sweepSummary(finished[0]).text).toBe(
      '2 trials: 1 cancelled, 1 succeeded'
    );
  });

  it("groups a Vertex AI tuning job as a sweep of its own, saying the job's state", () => {
    const tuning = job('lr-sweep', 'running');
    tuning.spec = { ...tuning.spec, labels: { 'tfc-sweep': tuning.id } };
    const groups = groupJobs([tuning, job('alone', 'succeeded')]);
    expect(groups.map(g => g.sweep)).toEqual([tuning.id, null]);
    expect(groups[0].running).toBe(true);
    expect(sweepSummary(groups[0])).toEqual({
      name: 'lr-sweep',
      text: 'one tuning job: running'
    });
  });

  it('splits jobs alone into Running and Finished, in their order', () => {
    const states: JobState[] = ['queued', 'succeeded', 'pending', 'failed'];
    const jobs = states.map((s, i) => job(`j${i}`, s));
    const { running, finished } = sections(groupJobs(jobs));
    expect(running.map(g => g.jobs[0].name)).toEqual(['j0', 'j2']);
    expect(finished.map(g => g.jobs[0].name)).toEqual(['j1', 'j3']);
  });
});

describe('trialOf', () => {
  it("is a trial's number, shown in its row, and null for a job alone", () => {
    expect(trialOf(job('t', 'running', 'sweep-1', 0))).toBe(0);
    expect(trialOf(job('t', 'running', 'sweep-1', 12))).toBe(12);
    expect(trialOf(job('alone', 'running'))).toBeNull();
    const odd = job('t', 'running', 'sweep-1', 1);
    for (const trial of ['', 'x', '1.5']) {
      const labels = { 'tfc-sweep': 'sweep-1', 'tfc-trial': trial };
      expect(trialOf({ ...odd, spec: { labels } })).toBeNull();
    }
  });
});
