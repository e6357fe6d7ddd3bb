/**
 * `staunch/testing`: fault injection for users' tests, portable (no `node:`,
 * no package). A fetch that fails by script or seeded chance and counts what
 * it saw, and a virtual clock that runs staunch's waits at once. The real
 * server is `staunch/testing/server` (Node), the undici Dispatcher
 * `staunch/testing/undici` (Node and undici).
 */
export { TestClock, testClock } from './clock.js';
export { type FaultFetch, type FaultFetchOptions, type FetchLike, faultFetch } from './fetch.js';
export {
  type ChanceFault,
  type FaultName,
  type ResponseStep,
  type ScriptOptions,
  type Step,
  seededRandom,
} from './script.js';
export { Seen, type SeenRequest } from './seen.js';
export { VirtualClock } from './virtual-clock.js';
