/**
 * The hedging runs' verdict: each hedging strategy against `staunch` (the
 * same defaults without hedging) on the same arrivals: its p99, its load
 * (attempts per request, and the upstream's work per request) and its
 * goodput, as ratios to staunch's. `staunch+hedge` is held to three
 * targets:
 *
 * 1. load: attempts per request ≤ 1.1 × staunch's (hedges are paid from the
 *    retry budget, 10 % of the first attempts);
 * 2. goodput ≥ staunch's (hedging never costs answers), counted as answers
 *    within the deadline: both runs have the same arrivals, so that is
 *    goodput over the same span. The table's goodput, answers within the
 *    arrival span, also moves with latency (an answer that comes back after
 *    the span's end falls out of it), which a run where every request is
 *    answered must not read as a loss;
 * 3. tail (only where the upstream has one, `tailRate` > 0): p99 ≤ 0.3 ×
 *    staunch's.
 *
 * `hedge-fixed` (the naive hedge) is measured the same way, with no target:
 * its figures are the comparison.
 */
import type { StrategyMetrics } from './metrics.js';
import type { LabResult } from './result.js';

/** The targets of `staunch+hedge`, as ratios to `staunch`. */
export const HEDGE_TARGETS: Readonly<{ load: number; goodput: number; p99: number }> =
  Object.freeze({ load: 1.1, goodput: 1, p99: 0.3 });

/** A hedging strategy's figures over staunch's (no hedging), on the same run. */
export interface HedgeComparison {
  readonly name: string;
  /** Its p99 over staunch's; `null` without answers on either side. */
  readonly p99: number | null;
  /** Its attempts per request over staunch's. */
  readonly attempts: number;
  /** Its upstream work per request over staunch's; `null` when not measured. */
  readonly work: number | null;
  /** Its goodput (answers within the goodput window) over staunch's. */
  readonly goodput: number;
  /** Its answers within the deadline over staunch's: the verdict's goodput. */
  readonly answers: number;
}

/** One target of the verdict. */
export interface HedgeCheck {
  readonly name: 'load' | 'goodput' | 'p99';
  readonly pass: boolean;
  /** What was compared, in words. */
  readonly detail: string;
}

/** The hedging comparison of a run; `null` without `staunch` and a hedging strategy. */
export interface HedgeVerdict {
  readonly comparisons: readonly HedgeComparison[];
  /** `staunch+hedge`'s targets (empty when it did not run). */
  readonly checks: readonly HedgeCheck[];
  readonly pass: boolean;
}

const HEDGERS: readonly string[] = ['hedge-fixed', 'staunch+hedge'];

const ratio = (a: number | null, b: number | null): number | null =>
  a === null || b === null || b === 0 ? null : a / b;

function compare(s: StrategyMetrics, base: StrategyMetrics): HedgeComparison {
  return {
    name: s.name,
    p99: ratio(s.p99, base.p99),
    attempts: base.attemptsPerRequest === 0 ? 1 : s.attemptsPerRequest / base.attemptsPerRequest,
    work: ratio(s.workPerRequest, base.workPerRequest),
    goodput: base.goodput === 0 ? 1 : s.goodput / base.goodput,
    answers: base.successes === 0 ? 1 : s.successes / base.successes,
  };
}

/** The hedging verdict of `result` (see the module's comment). */
export function hedgeVerdict(result: LabResult): HedgeVerdict | null {
  const base = result.strategies.find((s) => s.name === 'staunch');
  const hedgers = result.strategies.filter((s) => HEDGERS.includes(s.name));
  if (base === undefined || hedgers.length === 0) return null;
  const comparisons = hedgers.map((s) => compare(s, base));
  const own = result.strategies.find((s) => s.name === 'staunch+hedge');
  const checks: HedgeCheck[] = [];
  if (own !== undefined) {
    const c = compare(own, base);
    const t = HEDGE_TARGETS;
    checks.push(
      {
        name: 'load',
        pass: c.attempts <= t.load,
        detail: `${own.attemptsPerRequest.toFixed(3)} attempts/request vs ${base.attemptsPerRequest.toFixed(3)} (≤ ${t.load}×)`,
      },
      {
        name: 'goodput',
        pass: c.answers >= t.goodput,
        detail: `${own.successes} answers within the deadline vs ${base.successes} (≥ ${t.goodput}×)`,
      },
    );
    if ((result.config.server.tailRate ?? 0) > 0) {
      checks.push({
        name: 'p99',
        pass: c.p99 !== null && c.p99 <= t.p99,
        detail: `${msOf(own.p99)} vs ${msOf(base.p99)} (≤ ${t.p99}×)`,
      });
    }
  }
  return { comparisons, checks, pass: checks.length > 0 && checks.every((c) => c.pass) };
}

const msOf = (x: number | null): string => (x === null ? '–' : `${Math.round(x)} ms`);
const times = (x: number | null): string => (x === null ? '–' : `${x.toFixed(2)}×`);

/** The verdict as lines for the terminal: one per hedging strategy, then the targets. */
export function hedgeLines(v: HedgeVerdict): string[] {
  const lines = v.comparisons.map(
    (c) =>
      `${c.name} vs staunch (no hedge): p99 ${times(c.p99)}, attempts/request ${times(c.attempts)}, upstream work/request ${times(c.work)}, answers ${times(c.answers)} (goodput ${times(c.goodput)})`,
  );
  if (v.checks.length > 0) {
    const failed = v.checks.filter((c) => !c.pass).map((c) => c.name);
    const head = v.pass ? 'PASS' : `FAIL (${failed.join(', ')})`;
    lines.push(
      `hedging verdict for staunch+hedge: ${head} · ${v.checks.map((c) => `${c.name}: ${c.detail}`).join(' · ')}`,
    );
  }
  return lines;
}
