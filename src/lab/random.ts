/**
 * Seeded randomness for the lab: every random draw of a run (arrivals,
 * backoff jitter, the server's failures) comes from a stream derived from
 * the run's seed, so that a seed replays the same run to the last number.
 */
import type { Random } from '../internal/clock.js';

/** splitmix32: spreads a 32-bit seed over the state of the generator. */
function mix(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/**
 * A uniform source in [0, 1) for `seed` and a named `stream`: sfc32 (Small
 * Fast Counting, 128 bits of state), seeded through splitmix32. Two streams
 * of one seed are independent for the lab's purposes; the same seed and
 * stream always give the same sequence.
 * @example const jitter = seededRandom(42, 'jitter:fixed');
 */
export function seededRandom(seed: number, stream = ''): Random {
  let h = mix(seed >>> 0);
  for (let i = 0; i < stream.length; i++) h = mix(h ^ stream.charCodeAt(i));
  let a = mix(h);
  let b = mix(a);
  let c = mix(b);
  let d = mix(c) | 1;
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4_294_967_296;
  };
  // Discard the first draws: sfc32 mixes its state in a dozen rounds.
  for (let i = 0; i < 12; i++) next();
  return next;
}
