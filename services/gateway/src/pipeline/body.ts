import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction } from 'express';
import { BODY_LIMIT_BYTES, readPlainBody } from '@mandate/shared/http';

/**
 * The raw body: a plain body of a known length within the limit is read directly (the common
 * case); a compressed or chunked body, or one whose length is over the limit, goes through
 * express.raw (inflate, 413). No length and no transfer encoding: no body.
 */
export function bodyReader() {
  // Compressed, chunked or oversized bodies: body-parser inflates them or answers 413.
  const readBodyFallback = express.raw({ limit: BODY_LIMIT_BYTES, type: () => true });
  return (req: IncomingMessage, res: ServerResponse): Promise<Buffer | undefined> => {
    const { headers } = req;
    const rawLength = headers['content-length'];
    const length = Number(rawLength);
    if (headers['transfer-encoding'] === undefined && headers['content-encoding'] === undefined) {
      if (rawLength === undefined) return Promise.resolve(undefined);
      if (length >= 0 && length <= BODY_LIMIT_BYTES) return readPlainBody(req);
    }
    const r = req as IncomingMessage & { body?: unknown };
    return new Promise((resolve, reject) =>
      readBodyFallback(
        r as never,
        res as never,
        ((err?: unknown) =>
          err ? reject(err) : resolve(Buffer.isBuffer(r.body) ? r.body : undefined)) as NextFunction,
      ),
    );
  };
}
