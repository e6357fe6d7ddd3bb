// The peers the live lab puts beside staunch's strategies: what users pick instead.
// Dev dependencies only; never imported from src/.
import axios from './axios.mjs';
import got from './got.mjs';
import ky from './ky.mjs';
import pRetry from './p-retry.mjs';
import undiciRetry from './undici-retry.mjs';

export const peers = [ky, got, axios, undiciRetry, pRetry];
