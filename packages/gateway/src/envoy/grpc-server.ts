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
import type { AdmissionHost } from '../admission/admit-request.js';
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

/** Options of {@link EnvoyRateLimitServer.start}. */
export interface EnvoyServerOptions {
  readonly host: AdmissionHost;
  /** The `envoy:` section (its host and port). */
  readonly config: EnvoyConfig;
  /** Wall-clock milliseconds for reset epochs; default `Date.now`. */
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

  private constructor(server: Server, address: string, service: RateLimitService) {
    this.#server = server;
    this.address = address;
    this.service = service;
  }

  /**
   * Binds `envoy.host:envoy.port` and starts serving.
   *
   * @throws the bind error gRPC reports (for example an address in use).
   */
  static async start(options: EnvoyServerOptions): Promise<EnvoyRateLimitServer> {
    const service = new RateLimitService(options.host, options.now);
    // Build the plan now, so a broken section fails the start rather than the first request.
    void service.plan;
    const server = new Server({ 'grpc.max_receive_message_length': 1024 * 1024 });
    server.addService(rateLimitPackage().RateLimitService.service, {
      ShouldRateLimit: (
        call: ServerUnaryCall<RateLimitRequestMessage, RateLimitResponseMessage>,
        callback: sendUnaryData<RateLimitResponseMessage>,
      ) => {
        const id = call.metadata.get('x-request-id')[0];
        service.shouldRateLimit(call.request, typeof id === 'string' ? id : undefined).then(
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
    const bound = await new Promise<number>((resolve, reject) => {
      server.bindAsync(`${h}:${port}`, ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      );
    });
    const address = `${h}:${bound}`;
    options.host.logger.info({ address }, 'sluice envoy rate limit service listening');
    return new EnvoyRateLimitServer(server, address, service);
  }

  /** Stops the service: calls in flight finish, then the listener closes (forced after `graceMs`). */
  close(graceMs = 2000): Promise<void> {
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
