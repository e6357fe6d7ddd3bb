/** The caller's side of one logical request in the undici adapters: see src/internal/token.ts. */
export { AbortToken } from '../internal/token.js';
