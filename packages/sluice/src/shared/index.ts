export { DEFAULT_OVERRIDE_BYTES, SharedOverrides } from './shared-overrides.js';
export { SharedStore, type SharedStoreStats } from './shared-store.js';
export {
  type ResolvedSharedStoreOptions,
  resolveSharedStoreOptions,
  type SharedStoreOptions,
} from './shared-store-options.js';
export { sharedTimeClock } from './shared-time-clock.js';
export { tableBytes } from './table-memory.js';
