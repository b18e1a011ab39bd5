export { expectWellFormedDecision } from './decision-shape.js';
export { ReferenceStore } from './reference-store.js';
export { type ConformanceOptions, type StoreFactory, storeConformance } from './store-conformance.js';
