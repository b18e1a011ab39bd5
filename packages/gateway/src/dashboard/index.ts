export { capacityView, type PeerInFlight } from './capacity-view.js';
export {
  Dashboard,
  type DashboardOptions,
  type DashboardSource,
  type QuotaSource,
  type TopKeysSource,
} from './dashboard.js';
export { DASHBOARD_CSP, DashboardAssets, DEFAULT_ASSETS_DIR } from './dashboard-assets.js';
export type * from './dashboard-frame.js';
export { type RateShipment, RateWindow, type RateWindowOptions } from './rate-window.js';
export { storeHealth } from './store-health.js';
export {
  type LimitedKeyRow,
  type LimitedKeysView,
  type ThreadFeed,
  ThreadPeers,
  TOP_SHIPPED,
} from './thread-peers.js';
export { type PeerUnits, unitsView } from './units-view.js';
