/**
 * The OpenID4VP vocabulary this verifier shares with the wallets that answer it (docs/WALLET.md):
 * what a wallet must read in a request object and name in its answer. A wallet (the test wallet,
 * @mandate/test-wallet, included) takes it from here, not from the verifier's code.
 */

/** The EU PID as an SD-JWT VC: the one credential this verifier asks for. */
export const PID_VCT = 'urn:eudi:pid:1';
export const PID_FORMAT = 'dc+sd-jwt';
/** The credential query id; the wallet's vp_token maps it to the presentation. */
export const PID_QUERY_ID = 'pid';

/**
 * Client identifier prefix: `x509_san_dns`. OpenID4VP 1.0 lets `redirect_uri:` requests only travel
 * unsigned, and a signed request (request_uri, application/oauth-authz-req+jwt) is what the EUDI
 * wallets expect; `x509_san_dns` is the signed prefix that needs no federation or DID infrastructure
 * and that the EUDI reference wallets and @openid4vc/openid4vp support. The request carries the
 * verifier's certificate chain in x5c; the wallet checks that the leaf names the client_id's DNS name
 * and that the response_uri lives on that host.
 */
export const CLIENT_ID_PREFIX = 'x509_san_dns:';
export const REQUEST_OBJECT_TYP = 'oauth-authz-req+jwt';
export const REQUEST_OBJECT_CONTENT_TYPE = 'application/oauth-authz-req+jwt';
