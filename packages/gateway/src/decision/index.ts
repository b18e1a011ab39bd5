export {
  type DecisionConfig,
  type DecisionHeaderNames,
  resolveDecisionConfig,
} from '../config/decision-config.js';
export {
  type DecisionAnswer,
  type DecisionHost,
  decideRequest,
  type RequestFacts,
} from './decide-request.js';
export { asciiHeader, DecisionServer, type DecisionServerOptions } from './decision-server.js';
