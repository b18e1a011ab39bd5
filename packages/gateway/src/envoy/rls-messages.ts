import { ErrorCode, SluiceError } from 'sluice';

/** A `RateLimitRequest` as proto-loader decodes it (`keepCase`, enums as strings, 64-bit integers as strings). */
export interface RateLimitRequestMessage {
  readonly domain?: string;
  readonly descriptors?: readonly {
    readonly entries?: readonly { readonly key?: string; readonly value?: string }[];
    readonly limit?: { readonly requests_per_unit?: number; readonly unit?: string } | null;
    readonly hits_addend?: { readonly value?: string | number } | null;
  }[];
  readonly hits_addend?: number;
}

/** `RateLimitResponse.Code`. */
export type ResponseCode = 'OK' | 'OVER_LIMIT';

/** One `DescriptorStatus`. */
export interface DescriptorStatusMessage {
  readonly code: ResponseCode;
  readonly current_limit: {
    readonly name: string;
    readonly requests_per_unit: number;
    readonly unit: string;
  } | null;
  readonly limit_remaining: number;
  readonly duration_until_reset: { readonly seconds: number; readonly nanos: number } | null;
}

/** A `RateLimitResponse` in the shape proto-loader encodes. */
export interface RateLimitResponseMessage {
  readonly overall_code: ResponseCode;
  readonly statuses: readonly DescriptorStatusMessage[];
  readonly response_headers_to_add: readonly { readonly key: string; readonly value: string }[];
  readonly request_headers_to_add: readonly { readonly key: string; readonly value: string }[];
  readonly raw_body: Buffer;
}

/**
 * A request the service refuses to decide, mapped onto a gRPC status by the transport: `ERR_INVALID_RATE_LIMIT_REQUEST`
 * (INVALID_ARGUMENT) for a malformed request, `ERR_STORE_UNAVAILABLE` (UNAVAILABLE) when the store cannot decide.
 */
export class RateLimitServiceError extends SluiceError {
  /** `invalid_argument` for a malformed request, `unavailable` when the store cannot decide. */
  readonly kind: 'invalid_argument' | 'unavailable';
  constructor(kind: 'invalid_argument' | 'unavailable', message: string, options?: ErrorOptions) {
    super(
      kind === 'invalid_argument' ? ErrorCode.InvalidRateLimitRequest : ErrorCode.StoreUnavailable,
      message,
      {},
      options,
    );
    this.name = 'RateLimitServiceError';
    this.kind = kind;
  }
}
