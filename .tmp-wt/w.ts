import { parentPort, workerData } from 'node:worker_threads';
import { definePolicy } from '../packages/sluice/src/core/index.ts';
const x: number = 3;
parentPort!.postMessage({ x, p: definePolicy({ name: 'a', quota: 1, window: 1 }).capacityUnits, d: workerData });
