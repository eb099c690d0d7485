/**
 * Compile-time check (no test runs it; `jlpm types:check` type-checks it): the hand-written
 * interfaces of src/types.ts against the types that openapi-typescript generates from
 * tfc_jupyter/server/openapi.yaml (src/openapi.d.ts, `jlpm types:gen`).
 *
 * For each schema that types.ts mirrors, `Mirror<H, G, ...>` is `true` only when
 *  - H (types.ts) and G (the OpenAPI file) have the same keys, but for the ones listed as only in
 *    types.ts or only in the OpenAPI file (the lists must be exact: a key added to or dropped
 *    from either side fails until it is added or listed);
 *  - every shared key has the same type on both sides (mutually assignable, optional and null
 *    included), but for the ones listed as
 *    - narrowed: types.ts says more than the OpenAPI file (`state: JobState` where the file says
 *      `string`); H's type must still be assignable to G's, and must still differ from it;
 *    - mirrored: the value is itself a mirrored schema, checked on its own line below.
 * Otherwise it is an object that says what differs, and `Assert` fails with it in the message.
 */
import type { components, paths } from '../openapi';
import type {
  ICreateJob,
  ICreated,
  IDefaults,
  IEpochMetrics,
  IJob,
  ILogChunk,
  IMachine,
  IMachines,
  IMetrics,
  IPlan,
  IRefusal,
  JobState
} from '../types';

type Schemas = components['schemas'];
type Json<R> = R extends { content: { 'application/json': infer B } }
  ? B
  : never;
type Get<P extends keyof paths> = paths[P] extends {
  get: { responses: { 200: infer R } };
}
  ? Json<R>
  : never;
type CreatedResponses = paths['/jobs']['post']['responses'];

/** An object type as a type literal (an interface has no implicit index signature). */
type Plain<T> = { [K in keyof T]: T[K] };
/** A and B are assignable to each other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The keys of a union's members, all of them. */
type KeysOf<U> = U extends unknown ? keyof U : never;
/** A union of answers read as one object: a key some members lack may be undefined. */
type Merged<U> = {
  [K in KeysOf<U>]: U extends unknown
    ? K extends keyof U
      ? U[K]
      : undefined
    : never;
};

type Differ<H, G, Skip> = {
  [K in Exclude<keyof H & keyof G, Skip>]-?: Same<H[K], G[K]> extends true
    ? never
    : K;
}[Exclude<keyof H & keyof G, Skip>];
type NotNarrower<H, G, K extends keyof H & keyof G> = {
  [P in K]-?: [Plain<H[P]>] extends [G[P]]
    ? Same<H[P], G[P]> extends true
      ? P
      : never
    : P;
}[K];

type Mirror<
  H,
  G,
  OnlyInTypes extends keyof H = never,
  OnlyInSpec extends keyof G = never,
  Narrowed extends keyof H & keyof G = never,
  Mirrored extends keyof H & keyof G = never
> =
  Same<Exclude<keyof H, keyof G>, OnlyInTypes> extends false
    ? { 'keys only in types.ts (list them exactly)': Exclude<keyof H, keyof G> }
    : Same<Exclude<keyof G, keyof H>, OnlyInSpec> extends false
      ? {
          'keys only in openapi.yaml (list them exactly)': Exclude<
            keyof G,
            keyof H
          >;
        }
      : [Differ<H, G, Narrowed | Mirrored>] extends [never]
        ? [NotNarrower<H, G, Narrowed>] extends [never]
          ? true
          : {
              'listed as narrowed, but not narrower than openapi.yaml': NotNarrower<
                H,
                G,
                Narrowed
              >;
            }
        : {
            'types differ between types.ts and openapi.yaml': Differ<
              H,
              G,
              Narrowed | Mirrored
            >;
          };

/** Compiles only with `true`. */
type Assert<T extends true> = T;

type MachinesAnswer = Get<'/machines'>;
type DefaultsAnswer = Get<'/defaults'>;
type MetricsEpoch = Schemas['Metrics']['epochs'][number];

export type Checks = [
  Assert<Same<JobState, Schemas['Job']['state']>>,
  // `replicas`: sent by the server (jobs.job_dict), missing in the OpenAPI file.
  Assert<Mirror<IJob, Schemas['Job'], 'replicas', 'log_dir'>>,
  Assert<
    Mirror<
      IMetrics,
      Schemas['Metrics'],
      never,
      'saved' | 'tensorboard' | 'epoch_count',
      'state',
      'epochs'
    >
  >,
  Assert<Mirror<IEpochMetrics, MetricsEpoch>>,
  Assert<Mirror<ILogChunk, Schemas['LogChunk'], never, never, 'state'>>,
  Assert<
    Mirror<
      IMachine,
      MachinesAnswer['machines'][number],
      never,
      'vcpus' | 'memory_gb'
    >
  >,
  Assert<Mirror<IMachines, MachinesAnswer, never, never, never, 'machines'>>,
  Assert<
    Mirror<
      IDefaults,
      DefaultsAnswer,
      never,
      'root_dir' | 'jobs_home',
      never,
      'options' | 'fields'
    >
  >,
  Assert<Mirror<IDefaults['fields'][number], DefaultsAnswer['fields'][number]>>,
  Assert<
    Mirror<
      IDefaults['options'][number],
      DefaultsAnswer['options'][number],
      never,
      'repeatable' | 'boolean'
    >
  >,
  // `refused`: sent by the server (Plan.summary), missing in the OpenAPI file's Plan.
  Assert<
    Mirror<
      IPlan,
      Schemas['Plan'],
      'refused',
      | 'image'
      | 'request'
      | 'request_title'
      | 'cost_at_most'
      | 'cost_is_floor'
      | 'current_prices'
      | 'prices'
      | 'restarts'
      | 'sweep'
      | 'sweep_estimate',
      'spec'
    >
  >,
  // A plan's `refused` is an error body (TfcError.to_dict).
  Assert<Mirror<IRefusal, Schemas['Error'], never, 'error'>>,
  Assert<Mirror<ICreateJob, Schemas['CreateJob'], never, never, 'options'>>,
  // POST /jobs answers 201 {job, plan}, 202 {sweep, trials, parallel, path, driver, plan} (a
  // sweep started) or, for a dry run, 200 {dry_run, plan, text, script, sweep}.
  Assert<
    Mirror<
      ICreated,
      Merged<
        | Json<CreatedResponses[200]>
        | Json<CreatedResponses[201]>
        | Json<CreatedResponses[202]>
      >,
      never,
      'script',
      never,
      'job' | 'plan'
    >
  >,
  // src/api.ts reads GET /jobs as `{ jobs: IJob[] }`.
  Assert<Mirror<{ jobs: IJob[] }, Get<'/jobs'>, never, never, never, 'jobs'>>
];
