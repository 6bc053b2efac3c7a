import type { IncomingHttpHeaders } from 'node:http';
import { BODY_LIMIT_BYTES } from '@mandate/shared/http';

const JSON_MEDIA_TYPE = /^application\/([a-z0-9.+-]*\+)?json$/i;
const UTF8_CHARSET = /^charset\s*=\s*"?utf-8"?$/i;

/**
 * A JSON body in UTF-8 of a known length within the limit, neither compressed nor chunked: the
 * kind the verify route reads itself with the shared pipeline's readPlainBody (a subset of what
 * assertJsonContentType lets through; everything else takes body-parser's way, which inflates,
 * streams and answers 413).
 */
export function isPlainJsonBody(headers: IncomingHttpHeaders): boolean {
  if (headers['transfer-encoding'] !== undefined || headers['content-encoding'] !== undefined) return false;
  const length = Number(headers['content-length']);
  if (!(length > 0 && length <= BODY_LIMIT_BYTES)) return false;
  const type = headers['content-type'];
  if (typeof type !== 'string') return false;
  // What the gateway forwards from every JSON client, decided without splitting.
  if (type === 'application/json' || type === 'application/json; charset=utf-8') return true;
  const [media, ...params] = type.split(';');
  if (!JSON_MEDIA_TYPE.test(media!.trim())) return false;
  return params.every((p) => UTF8_CHARSET.test(p.trim()));
}
