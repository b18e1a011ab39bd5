/** The browser bundle of the status element test: the client SDK plus ManualClock, exposed on `window.sluice`. */
import { createClient, defineRateLimitStatus } from '../../src/client/index.js';
import { ManualClock } from '../../src/core/manual-clock.js';

(globalThis as { sluice?: unknown }).sluice = { createClient, defineRateLimitStatus, ManualClock };
