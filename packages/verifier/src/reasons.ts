/**
 * The reasons of a decision in words (docs/API.md#reasons-in-words): one catalogue, read by the
 * dashboard, by docs/API.md's table (test/docs/reasons.test.ts holds them equal) and by anyone who
 * imports `@mandate/verifier/decide`. Each reason has a plain sentence, and a sentence with the
 * comparison that failed ("Amount 1,200.00 EUR exceeds the mandate's limit of 500.00 EUR per call")
 * when the facts it compares are given: the request, the mandate, the budget now. A fact missing
 * gives the plain sentence, never a sentence with a hole. Dependency-free (Intl only): it runs in
 * the browser too.
 */

/** What a reason's sentence may compare: each member optional, as a caller knows it. */
export interface ReasonFacts {
  /** What was asked: POST /v1/verify's body (AuthZEN's evaluation mapped to it). */
  request?: {
    mandate_id?: string;
    action?: string;
    resource?: string;
    amount?: number;
    currency?: string;
    delegate_id?: string;
    min_assurance?: string;
  };
  /** The mandate decided against, as GET /v1/mandates/{id} answers it (or its JWS's payload). */
  mandate?: {
    principal?: { verified?: { assurance: string } | null } | null;
    delegate?: { id: string };
    scope?: {
      actions?: readonly string[];
      resources?: readonly string[] | null;
      constraints?: { max_amount?: number | null; currency?: string | null } | null;
      budget?: { amount: number; period: string } | null;
    };
    valid_from?: string | null;
    expires_at?: string | null;
  };
  /** The budget at the decision, as GET /v1/mandates/{id}/budget answers it. */
  budget?: { available: number; currency: string; period: string };
}

interface Entry {
  /** The sentence without facts: docs/API.md's table shows it. */
  sentence: string;
  /** Which facts beyond the request its comparison reads: a caller fetches only those. */
  reads?: 'mandate' | 'budget';
  /** The sentence with the comparison, or undefined when a fact it needs is missing. */
  compared?: (facts: ReasonFacts) => string | undefined;
}

/**
 * An amount in minor units as its currency writes it, with the currency's minor digits (Intl's:
 * 2 for EUR, 0 for JPY, 3 for KWD) and its code after it: "1,200.00 EUR". English grouping, as
 * every sentence here is English.
 */
export function formatAmount(minor: number, currency: string): string {
  let digits = 2;
  try {
    digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions()
      .maximumFractionDigits!;
  } catch {
    // A code Intl refuses (not three letters): two digits, as most currencies have.
  }
  const major = new Intl.NumberFormat('en', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  }).format(minor / 10 ** digits);
  return `${major} ${currency}`;
}

/** An instant as the dashboard writes times: "2026-03-20 09:30:00 UTC". */
const utc = (iso: string): string | undefined => {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? undefined : new Date(t).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
};

const list = (items: readonly string[] | null | undefined): string | undefined =>
  items && items.length ? items.join(', ') : undefined;

const PERIOD_WORDS: Record<string, string> = {
  total: "of the mandate's total budget",
  day: "of the mandate's budget for this day",
  week: "of the mandate's budget for this week",
  month: "of the mandate's budget for this month",
};

/** The catalogue, in the order the checks run (docs/API.md#verify), OK first and AuthZEN's last. */
const REASONS = {
  OK: {
    sentence: 'The mandate allows this action now.',
    compared: ({ request }) => request?.action && `The mandate allows ${request.action} now.`,
  },
  MANDATE_SUSPENDED: {
    sentence: 'The mandate is suspended: it allows nothing until it is reactivated.',
  },
  MANDATE_REVOKED: {
    sentence: 'The mandate is revoked: it allows nothing any more.',
  },
  MANDATE_EXPIRED: {
    sentence: 'The mandate has expired.',
    reads: 'mandate',
    compared: ({ mandate }) => {
      const at = mandate?.expires_at ? utc(mandate.expires_at) : undefined;
      return at && `The mandate expired at ${at}.`;
    },
  },
  MANDATE_NOT_YET_VALID: {
    sentence: 'The mandate is not valid yet (its validity starts later).',
    reads: 'mandate',
    compared: ({ mandate }) => {
      const from = mandate?.valid_from ? utc(mandate.valid_from) : undefined;
      return from && `The mandate is valid only from ${from}.`;
    },
  },
  DELEGATE_MISMATCH: {
    sentence: 'The delegate named is not the one this mandate was given to.',
    reads: 'mandate',
    compared: ({ request, mandate }) =>
      request?.delegate_id !== undefined && mandate?.delegate
        ? `Delegate ${request.delegate_id} is not the mandate's delegate ${mandate.delegate.id}.`
        : undefined,
  },
  PRINCIPAL_NOT_VERIFIED: {
    sentence: "The principal's identity was not verified, and a minimum assurance was asked.",
    compared: ({ request }) =>
      request?.min_assurance &&
      `Assurance ${request.min_assurance} was asked, but the principal's identity was not verified.`,
  },
  ASSURANCE_TOO_LOW: {
    sentence: "The principal's identity was verified at a lower assurance than asked.",
    reads: 'mandate',
    compared: ({ request, mandate }) => {
      const verified = mandate?.principal?.verified?.assurance;
      return request?.min_assurance && verified
        ? `Assurance ${request.min_assurance} was asked, but the principal's identity was verified at ${verified}.`
        : undefined;
    },
  },
  ACTION_NOT_PERMITTED: {
    sentence: "The action is not among the mandate's actions.",
    reads: 'mandate',
    compared: ({ request, mandate }) => {
      const actions = list(mandate?.scope?.actions);
      return request?.action && actions
        ? `Action ${request.action} is not among the mandate's actions (${actions}).`
        : undefined;
    },
  },
  RESOURCE_NOT_PERMITTED: {
    sentence: "The resource is not among the mandate's resources.",
    reads: 'mandate',
    compared: ({ request, mandate }) => {
      const resources = list(mandate?.scope?.resources);
      if (!request || !resources) return undefined;
      // Fail closed (docs/API.md#verify): a mandate that names resources refuses a request naming none.
      return request.resource === undefined
        ? `No resource was named, and the mandate allows only its resources (${resources}).`
        : `Resource ${request.resource} matches none of the mandate's resources (${resources}).`;
    },
  },
  AMOUNT_REQUIRED: {
    sentence: 'The mandate limits the amount: the request must name one (with its currency).',
    reads: 'mandate',
    compared: ({ mandate }) => {
      const { max_amount, currency } = mandate?.scope?.constraints ?? {};
      return max_amount != null && currency
        ? `The mandate limits the amount to ${formatAmount(max_amount, currency)} per call: the request must name one (with its currency).`
        : undefined;
    },
  },
  CURRENCY_MISMATCH: {
    sentence: "The currency differs from the mandate's.",
    reads: 'mandate',
    compared: ({ request, mandate }) => {
      const currency = mandate?.scope?.constraints?.currency;
      if (!request || !currency) return undefined;
      return request.currency === undefined
        ? `No currency was named, and the mandate's currency is ${currency}.`
        : `Currency ${request.currency} differs from the mandate's currency ${currency}.`;
    },
  },
  AMOUNT_EXCEEDS_LIMIT: {
    sentence: "The amount is above the mandate's limit.",
    reads: 'mandate',
    compared: ({ request, mandate }) => {
      const { max_amount, currency } = mandate?.scope?.constraints ?? {};
      // The decision compares minor units; the currency is the mandate's (or CURRENCY_MISMATCH came first).
      const unit = currency ?? request?.currency;
      return request?.amount !== undefined && max_amount != null && unit
        ? `Amount ${formatAmount(request.amount, unit)} exceeds the mandate's limit of ${formatAmount(max_amount, unit)} per call.`
        : undefined;
    },
  },
  BUDGET_EXCEEDED: {
    sentence: "The amount would take the mandate's budget for the period past its limit.",
    reads: 'budget',
    compared: ({ request, budget }) => {
      const period = budget ? PERIOD_WORDS[budget.period] : undefined;
      return request?.amount !== undefined && budget && period
        ? `Amount ${formatAmount(request.amount, budget.currency)} exceeds the ${formatAmount(budget.available, budget.currency)} left ${period}.`
        : undefined;
    },
  },
  // AuthZEN's answer for a mandate the tenant does not have (docs/API.md#authzen): verify's 404.
  MANDATE_NOT_FOUND: {
    sentence: 'No such mandate in this tenant.',
    compared: ({ request }) => request?.mandate_id && `No mandate ${request.mandate_id} in this tenant.`,
  },
} satisfies Record<string, Entry>;

/**
 * Every reason a decision answers: verify's (OK and DENY_REASONS) and AuthZEN's unknown mandate.
 * Not imported from decide.ts, which re-exports this module; packages/verifier/test/reasons.test.ts
 * holds the two lists equal.
 */
export type ReasonCode = keyof typeof REASONS;

/** Every reason code of the catalogue, in its order. */
export const REASON_CODES = Object.keys(REASONS) as ReasonCode[];

export const isReasonCode = (code: string): code is ReasonCode => Object.hasOwn(REASONS, code);

/** What a reason's comparison reads beyond the request (the mandate, the budget now), if anything. */
export const reasonReads = (code: string): 'mandate' | 'budget' | undefined =>
  isReasonCode(code) ? (REASONS[code] as Entry).reads : undefined;

/** A reason's plain sentence, as docs/API.md's table shows it. */
export const reasonSentence = (code: ReasonCode): string => REASONS[code].sentence;

/**
 * A reason in words: with the comparison when `facts` hold what it compares, else the plain
 * sentence. A code outside the catalogue (a newer service's) is answered as itself.
 */
export function reasonInWords(code: string, facts: ReasonFacts = {}): string {
  if (!isReasonCode(code)) return code;
  const entry: Entry = REASONS[code];
  return entry.compared?.(facts) || entry.sentence;
}
