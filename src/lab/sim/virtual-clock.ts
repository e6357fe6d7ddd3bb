/**
 * The simulator's clock lives in `testing/` since `staunch/testing` offers it
 * to users' tests (one virtual clock for the lab and the tests); the lab
 * keeps importing it from here.
 */
export { VirtualClock } from '../../testing/virtual-clock.js';
