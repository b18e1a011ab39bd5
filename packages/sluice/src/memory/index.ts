export { BucketTable } from './bucket-table.js';
export { MemoryOverrides } from './memory-overrides.js';
export {
  MemoryStore,
  type MemoryStoreOptions,
  type MemoryStoreStats,
  type ResolvedMemoryStoreOptions,
  resolveMemoryStoreOptions,
} from './memory-store.js';
