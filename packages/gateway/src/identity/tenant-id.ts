/**
 * A tenant id as the gateway keys it: in lower case, whatever the source (a JWT claim, the API key file, the
 * tenant header of a trusted proxy). Tenants are names of organisations, typed by people in many places, and an
 * operator's block of `tenant:acme` must hold against `ACME` and `Acme`: a tenant that a case change escapes is
 * no tenant block at all. Client and user ids keep their case: they are ids an identity provider issues, often
 * case-sensitive (a base64 subject), and two of them may differ only by case.
 *
 * `toLowerCase` is locale-independent; an id already in lower case is returned as it is.
 *
 * @param value - the tenant id as the source gives it.
 */
export function tenantId(value: string | undefined): string | undefined {
  return value === undefined ? undefined : value.toLowerCase();
}
