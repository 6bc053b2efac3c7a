import { DcqlQuery } from 'dcql';

/** The EU PID as an SD-JWT VC: the one credential this verifier asks for. */
export const PID_VCT = 'urn:eudi:pid:1';
export const PID_FORMAT = 'dc+sd-jwt';
/** The credential query id; the wallet's vp_token maps it to the presentation. */
export const PID_QUERY_ID = 'pid';
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
