export {
  type DecisionAnswer,
  type DecisionHost,
  decideRequest,
  type RequestFacts,
} from './decide-request.js';
export { type DecisionConfig, type DecisionHeaderNames, resolveDecisionConfig } from './decision-config.js';
export { asciiHeader, DecisionServer, type DecisionServerOptions } from './decision-server.js';
