/** The median of the finite values; `NaN` when there are none. */
export declare const median: (values: readonly number[]) => number;
/** The arithmetic mean. */
export declare const mean: (values: readonly number[]) => number;

/** One measured round of bench/lib/rounds.mjs, as far as the interval reads it. */
export interface MeasuredRound {
  readonly cells: Readonly<
    Record<
      string,
      { readonly rps: number; readonly processes?: readonly { readonly rps: number }[] }
    >
  >;
}

/**
 * A 95 % interval, `[low, high]`, for `variant`'s ratio to `baseline` over
 * `measured` rounds of `processes` processes a variant (two-level bootstrap),
 * its draws from `random` (numbers in [0, 1)).
 */
export declare function ratioInterval(
  measured: readonly MeasuredRound[],
  variant: string,
  baseline: string,
  processes: number,
  random: () => number,
  draws?: number,
): [number, number];

/** `met`, `NOT met`, or the median's side of `goal` when `interval` holds both. */
export declare function verdict(
  ratio: number,
  interval: readonly [number, number],
  goal: number,
): string;

/** One set of rounds, with its processes a variant. */
export interface MeasuredSet {
  readonly measured: readonly MeasuredRound[];
  readonly processes: number;
}

/** {@link ratioInterval} over several sets pooled. */
export declare function pooledInterval(
  sets: readonly MeasuredSet[],
  variant: string,
  baseline: string,
  random: () => number,
  draws?: number,
): [number, number];

/** A set's measured rounds from bench/undici-overhead.mjs's log or `--json` output. */
export declare function readSet(text: string): MeasuredSet;
