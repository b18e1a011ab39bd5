export { BucketTable } from './bucket-table.js';
export { MemoryOverrides } from './memory-overrides.js';
export { MemoryStore, type MemoryStoreStats } from './memory-store.js';
export {
  type MemoryStoreOptions,
  type ResolvedMemoryStoreOptions,
  resolveMemoryStoreOptions,
} from './memory-store-options.js';
