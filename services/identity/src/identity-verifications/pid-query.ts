import { DcqlQuery } from 'dcql';
import { PID_FORMAT, PID_QUERY_ID, PID_VCT } from '../contract';

export { PID_FORMAT, PID_QUERY_ID, PID_VCT };
/** Exactly what is asked: nothing else may be disclosed (data minimisation). */
export const REQUESTED_CLAIMS = ['family_name', 'given_name', 'birth_date'] as const;
export type RequestedClaim = (typeof REQUESTED_CLAIMS)[number];
export type PidClaims = Record<RequestedClaim, string>;

/** The DCQL query of every request: one PID, the three claims, holder binding required. */
export function pidDcqlQuery(): DcqlQuery.Input {
  return {
    credentials: [
      {
        id: PID_QUERY_ID,
        format: PID_FORMAT,
        meta: { vct_values: [PID_VCT] },
        require_cryptographic_holder_binding: true,
        claims: REQUESTED_CLAIMS.map((name) => ({ path: [name] })),
      },
    ],
  };
}
