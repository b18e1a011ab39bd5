import type * as PromClient from 'prom-client';
import { requirePeer } from '../http/peer-package.js';

/**
 * prom-client, loaded when `sluice/prometheus` is imported. When it is not installed, the import fails with a
 * `SluiceError` `ERR_MISSING_PEER` that says `npm install prom-client`, not with Node's bare module-not-found error.
 */
export const promClient: typeof PromClient = requirePeer<typeof PromClient>(
  'prom-client',
  'sluice/prometheus',
);
