export {
  Dashboard,
  type DashboardOptions,
  type DashboardSource,
  type QuotaSource,
  type TopKeysSource,
} from './dashboard.js';
export { DASHBOARD_CSP, DashboardAssets, DEFAULT_ASSETS_DIR } from './dashboard-assets.js';
export type * from './dashboard-frame.js';
export { RateWindow, type RateWindowOptions } from './rate-window.js';
export { storeHealth } from './store-health.js';
