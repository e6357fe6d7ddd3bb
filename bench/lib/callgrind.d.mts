/** What {@link readCallgrind} returns for one callgrind file. */
export interface CallgrindCosts {
  /** Self cost of the event by key (a file, a library, or a function). */
  readonly costs: Map<string, number>;
  /** The part spent in V8's parsers and compilers. */
  readonly compile: number;
  /** The file's whole cost of the event. */
  readonly total: number;
  /** The measured requests of the profile-variant.mjs run it counted. */
  readonly requests: number;
  /** With `callersOf`: the inclusive cost of its calls, by calling key. */
  readonly callers: Map<string, number>;
}

/**
 * Self costs by key ('file' or 'function') of one callgrind file: of
 * `event`, instructions (`Ir`) by default, or one of the cache simulation's.
 */
export declare function readCallgrind(
  file: string,
  options?: { by?: 'file' | 'function'; callersOf?: string; event?: string },
): CallgrindCosts;
