import { seededRandom } from '../../src/lab/random.js';
import type { Backoff } from '../../src/retry/backoff.js';

/** The delays `backoff` draws over 12 retries, each fed its previous delay, with a seeded random. */
export function delaysOf(backoff: Backoff, seed: number): number[] {
  const random = seededRandom(seed, 'backoff-probe');
  const out: number[] = [];
  let previous = 0;
  for (let attempt = 1; attempt <= 12; attempt++) {
    previous = backoff(attempt, previous, random);
    out.push(previous);
  }
  return out;
}
