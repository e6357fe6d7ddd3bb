/** The waiting room's heap of deadlines: items come out soonest first, whatever the order in. */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { popDue, pushDue } from '../../src/policy/breaker/until-heap.js';

describe('until-heap', () => {
  test('pops in order of `until`, however pushes and pops interleave', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: -1_000, max: 1_000 }), fc.constant(null))),
        (ops) => {
          const heap: { until: number }[] = [];
          const model: number[] = [];
          for (const op of ops) {
            if (op === null) {
              model.sort((a, b) => a - b);
              expect(popDue(heap)?.until).toBe(model.shift());
            } else {
              pushDue(heap, { until: op });
              model.push(op);
            }
          }
          model.sort((a, b) => a - b);
          const rest: number[] = [];
          for (let item = popDue(heap); item !== undefined; item = popDue(heap)) {
            rest.push(item.until);
          }
          expect(rest).toEqual(model);
        },
      ),
    );
  });

  test('an empty heap pops undefined', () => {
    expect(popDue([])).toBeUndefined();
  });
});
