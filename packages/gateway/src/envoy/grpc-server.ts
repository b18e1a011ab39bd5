import { type AddressInfo, createServer, type Server as NetServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  type GrpcObject,
  loadPackageDefinition,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceClientConstructor,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import { parseTrustedProxies } from 'sluice/http';
import type { AdmissionHost } from '../admission/admit-request.js';
import { PeerGate, type PeerGateSettings } from '../admission/peer-gate.js';
import type { EnvoyConfig } from '../config/envoy-config.js';
import { RateLimitService } from './rate-limit-service.js';
import {
  type RateLimitRequestMessage,
  type RateLimitResponseMessage,
  RateLimitServiceError,
} from './rls-messages.js';

/**
 * The folder of Sluice's protocol definitions (`packages/gateway/proto`). The path is the same from `src/` and
 * from `dist/`, two levels below the package.
 */
export const PROTO_DIR = new URL('../../proto/', import.meta.url);

/** proto-loader options: field names as on the wire (snake_case), enums as names, 64-bit integers as strings. */
const LOAD_OPTIONS: Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [fileURLToPath(PROTO_DIR)],
};

let loaded: GrpcObject | undefined;

/**
 * The `envoy.service.ratelimit.v3` package loaded from the .proto files (once per process): the service
 * definition for servers and the client constructor for tests and tools.
 */
export function rateLimitPackage(): { RateLimitService: ServiceClientConstructor } {
  loaded ??= loadPackageDefinition(loadSync('envoy/service/ratelimit/v3/rls.proto', LOAD_OPTIONS));
  const v3 = (((loaded.envoy as GrpcObject).service as GrpcObject).ratelimit as GrpcObject).v3 as GrpcObject;
  return { RateLimitService: v3.RateLimitService as ServiceClientConstructor };
}

/**
 * The peers and the cap of the configuration in effect (a reload applies to the next connection), the peer list
 * parsed once per configuration.
 */
function peerSettings(options: EnvoyServerOptions): () => PeerGateSettings {
  let source = options.config;
  let current: PeerGateSettings = parsed(source);
  return () => {
    const live = options.host.runtime.config.envoy;
    if (live !== undefined && live !== source) {
      source = live;
      current = parsed(live);
    }
    return current;
  };
}

function parsed(config: EnvoyConfig): PeerGateSettings {
  return {
    peers: parseTrustedProxies('envoy.allowedPeers', config.allowedPeers),
    maxConnections: config.maxConnections,
  };
}

/** Options of {@link EnvoyRateLimitServer.start}. */
export interface EnvoyServerOptions {
  readonly host: AdmissionHost;
  /** The `envoy:` section (its host and port). */
  readonly config: EnvoyConfig;
  /** Wall-clock milliseconds for reset epochs and call deadlines; default `Date.now`. */
  readonly now?: () => number;
}

/**
 * Envoy's rate limit service over gRPC (@grpc/grpc-js), plaintext on its own listener: point Envoy's
 * `envoy.filters.http.ratelimit` (`rate_limit_service.grpc_service`) at it. Malformed requests are answered
 * `INVALID_ARGUMENT`; a store that cannot decide `UNAVAILABLE`, so that Envoy's `failure_mode_deny` decides.
 *
 * @example
 * ```ts
 * const rls = await EnvoyRateLimitServer.start({ host: gateway, config: gateway.config.envoy! });
 * console.log(rls.address); // 127.0.0.1:8081
 * ```
 */
export class EnvoyRateLimitServer {
  /** `host:port` the service listens on. */
  readonly address: string;
  readonly service: RateLimitService;
  readonly #server: Server;
  readonly #listener: NetServer;

  private constructor(server: Server, listener: NetServer, address: string, service: RateLimitService) {
    this.#server = server;
    this.#listener = listener;
    this.address = address;
    this.service = service;
  }

  /**
   * Binds `envoy.host:envoy.port` and starts serving.
   *
   * @throws the listen error as Node reports it (for example `EADDRINUSE`).
   */
  static async start(options: EnvoyServerOptions): Promise<EnvoyRateLimitServer> {
    const now = options.now ?? Date.now;
    const service = new RateLimitService(options.host, now);
    // Build the plan now, so a broken section fails the start rather than the first request.
    void service.plan;
    const server = new Server({ 'grpc.max_receive_message_length': 1024 * 1024 });
    server.addService(rateLimitPackage().RateLimitService.service, {
      ShouldRateLimit: (
        call: ServerUnaryCall<RateLimitRequestMessage, RateLimitResponseMessage>,
        callback: sendUnaryData<RateLimitResponseMessage>,
      ) => {
        const id = call.metadata.get('x-request-id')[0];
        // A call still waiting for its turn when its caller left (cancelled, deadline passed) ends untouched.
        const d = call.getDeadline();
        const deadline = d instanceof Date ? d.getTime() : d;
        const gone = () => call.cancelled || now() >= deadline;
        service.shouldRateLimit(call.request, typeof id === 'string' ? id : undefined, gone).then(
          (answer) => callback(null, answer),
          (e: unknown) => {
            if (e instanceof RateLimitServiceError) {
              callback({
                code: e.kind === 'invalid_argument' ? status.INVALID_ARGUMENT : status.UNAVAILABLE,
                details: e.message,
              });
              return;
            }
            options.host.logger.error({ err: e }, 'envoy rate limit request failed');
            callback({ code: status.INTERNAL, details: 'the rate limit service failed' });
          },
        );
      },
    });
    const { host, port } = options.config;
    const h = host.includes(':') ? `[${host}]` : host;
    // The listener is Sluice's own, handing gRPC only the connections it admits: a peer outside allowedPeers, or a
    // connection past the cap, is closed before a byte is read (gRPC's own listener has no such hook).
    const injector = server.createConnectionInjector(ServerCredentials.createInsecure());
    const gate = new PeerGate({
      section: 'envoy',
      logger: options.host.logger,
      settings: peerSettings(options),
    });
    const listener = createServer((socket) => {
      if (gate.admit(socket)) injector.injectConnection(socket);
    });
    // A failed accept (EMFILE: no descriptor left) must not end the process and every listener with it.
    const bound = await new Promise<number>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(port, host, () => {
        listener.off('error', reject);
        listener.on('error', (e: NodeJS.ErrnoException) =>
          options.host.logger.warn({ code: e.code }, 'envoy rate limit service: accept failed'),
        );
        resolve((listener.address() as AddressInfo).port);
      });
    });
    const address = `${h}:${bound}`;
    options.host.logger.info({ address }, 'sluice envoy rate limit service listening');
    return new EnvoyRateLimitServer(server, listener, address, service);
  }

  /** Stops the service: calls in flight finish, then the listener closes (forced after `graceMs`). */
  close(graceMs = 2000): Promise<void> {
    // No new connection; those open are gRPC's to drain.
    this.#listener.close();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#server.forceShutdown();
        resolve();
      }, graceMs);
      timer.unref();
      this.#server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
