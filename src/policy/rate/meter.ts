/**
 * A cheap measure of a send rate: counts in time buckets, smoothed by an
 * exponentially weighted moving average, as the AWS SDKs' adaptive retry mode
 * measures its send rate. Pure functions over a JSON tuple, so that the same
 * code keeps a per-process meter and the meter inside the rate limiter's
 * store state.
 */

/** `[bucketStart (epoch ms), count in that bucket, smoothed rate (per s)]`. */
export type Meter = [number, number, number];

/** Width of a bucket, in ms. */
export const METER_BUCKET_MS = 500;
/** Weight of the newest bucket in the average. */
export const METER_SMOOTHING = 0.8;

function bucketOf(t: number): number {
  return Math.floor(t / METER_BUCKET_MS) * METER_BUCKET_MS;
}

/**
 * The average once the meter's bucket is closed and the buckets up to
 * `bucket` have passed: the closed bucket's rate weighs `METER_SMOOTHING`,
 * then each empty bucket since decays the average as a sample of 0 would.
 */
function smoothed(m: Meter, bucket: number): number {
  const closed = METER_SMOOTHING * (m[1] / (METER_BUCKET_MS / 1000)) + (1 - METER_SMOOTHING) * m[2];
  const empty = (bucket - m[0]) / METER_BUCKET_MS - 1;
  return empty > 0 ? closed * (1 - METER_SMOOTHING) ** empty : closed;
}

/** Counts one event at time `t`; returns the new meter (the input is not changed). */
export function meterRecord(m: Meter | undefined, t: number): Meter {
  const bucket = bucketOf(t);
  if (m === undefined) return [bucket, 1, 0];
  if (bucket > m[0]) return [bucket, 1, smoothed(m, bucket)];
  return [m[0], m[1] + 1, m[2]];
}

/**
 * {@link meterRecord} for a meter only its owner holds (a limiter's local
 * one): an event in the current bucket is counted in place, no new array.
 */
export function meterCount(m: Meter | undefined, t: number): Meter {
  if (m !== undefined && t - m[0] < METER_BUCKET_MS && t >= m[0]) {
    m[1]++;
    return m;
  }
  return meterRecord(m, t);
}

/** {@link meterCount} for `count` events at time `t`. */
export function meterCountMany(m: Meter | undefined, t: number, count: number): Meter {
  const next = meterCount(m, t);
  next[1] += count - 1;
  return next;
}

/**
 * The rate at `now`, in events per second: the average as it would be after
 * closing the bucket in progress, or, within that bucket, at least its count
 * scaled to a second (so a burst is seen before its bucket closes).
 */
export function meterRate(m: Meter | undefined, now: number): number {
  if (m === undefined) return 0;
  const bucket = bucketOf(now);
  if (bucket > m[0]) return smoothed(m, bucket);
  return Math.max(m[2], m[1] / (METER_BUCKET_MS / 1000));
}

/** The shortest part of a bucket in progress that {@link meterNow} scales to a second, ms. */
export const METER_NOW_MIN_MS = 250;

/**
 * The rate at `now` as a cut reads it: {@link meterRate}, except that a
 * bucket in progress counts over the time elapsed in it (at least
 * {@link METER_NOW_MIN_MS}), not over a whole bucket. In a ramp (a fleet
 * joining a key, each adding its share) the closed buckets lag, and half a
 * bucket's count over a whole one reads half the rate: the cut then started
 * there (the lab's `fleet`, live: 122/s where the fleet sent ~220/s under a
 * 200/s quota, a cut to 107/s).
 */
export function meterNow(m: Meter | undefined, now: number): number {
  const rate = meterRate(m, now);
  if (m === undefined || bucketOf(now) > m[0]) return rate;
  return Math.max(rate, m[1] / (Math.max(METER_NOW_MIN_MS, now - m[0]) / 1000));
}

/**
 * The meter moved `ms` later (whole buckets): time the key spent paused
 * never counts as idle, so a pause does not deflate the rate it measures.
 */
export function meterShift(m: Meter | null, ms: number): Meter | null {
  if (m === null || !(ms > 0)) return m;
  return [m[0] + Math.floor(ms / METER_BUCKET_MS) * METER_BUCKET_MS, m[1], m[2]];
}

/**
 * The average over closed buckets only (no partial bucket scaled up): an
 * estimate that a burst does not inflate, for floors that must not overshoot.
 */
export function meterSettled(m: Meter | null | undefined, now: number): number {
  if (m === undefined || m === null) return 0;
  const bucket = bucketOf(now);
  return bucket > m[0] ? smoothed(m, bucket) : m[2];
}
