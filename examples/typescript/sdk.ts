// A small SDK as a team builds it: the types openapi-typescript generates from the API document
// (api.d.ts), openapi-fetch's client over them, and retrygen's fetch adapter for the same document
// (retry/) as the client's `fetch`. Both api.d.ts and retry/ are generated:
//   npx openapi-typescript ../../conformance/faults/spec.yaml -o api.d.ts
//   retrygen generate --spec ../../conformance/faults/spec.yaml --lang typescript --adapter fetch --out retry/
// cargo xtask runtime-tests --lang typescript generates both in a scratch copy of this folder,
// compiles it with tsc --strict and runs sdk.test.ts against the real fault server.

import createClient from "openapi-fetch";
import type { paths } from "./api.js";
import { RETRY_TABLES, retryingFetch } from "./retry/index.js";
import type { RetryingFetchOptions } from "./retry/index.js";

/** What the SDK lets its users set of the retries (callbacks, the body read...). */
export type RetryOptions = Omit<RetryingFetchOptions, "tables" | "baseUrl">;

/**
 * The API's client for `baseUrl` (`https://api.example/v1`), whose requests
 * are retried as the API document's policy says.
 */
export function createSandboxClient(
  baseUrl: string,
  retries: RetryOptions = {},
) {
  // The installation: the adapter for this base URL, as openapi-fetch's `fetch`.
  const fetch = retryingFetch(globalThis.fetch, {
    ...retries,
    tables: RETRY_TABLES,
    baseUrl,
  });
  return createClient<paths>({ baseUrl, fetch });
}
