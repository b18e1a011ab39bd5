export { expectWellFormedDecision } from './decision-shape.js';
export { ReferenceStore } from './reference-store.js';
export { SteppedModel } from './stepped-model.js';
export { type ConformanceOptions, type StoreFactory, storeConformance } from './store-conformance.js';
