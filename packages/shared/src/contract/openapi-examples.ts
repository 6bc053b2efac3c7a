/**
 * Examples for the OpenAPI document, derived from its own schemas: every JSON request body (a
 * webhook's too) and success answer gets one (generators and API explorers show them), so no
 * operation is without an example and none can drift from its schema. A schema's own
 * `example`/`examples` (zod `.meta({ examples })`) win; otherwise the value follows the schema
 * (enum, const, default, format, bounds) and, for strings, the member's name; Redocly checks each
 * against its schema.
 */
type Schema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  example?: unknown;
  examples?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  minItems?: number;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
};
type Media = { schema?: Schema; example?: unknown };
type Operation = {
  requestBody?: { content?: Record<string, Media> };
  responses?: Record<string, { content?: Record<string, Media> }>;
};
interface Document {
  paths?: Record<string, Record<string, unknown>>;
  webhooks?: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, Schema> };
}

const INSTANT = '2026-11-26T12:00:00.000Z';
const ID_TAIL = '01jdqv8k3mzq4y6t2n9c0w5hxr';
/** Id prefixes by member name (ids are `<prefix>_` and 26 base-32 characters). */
const ID_PREFIX: Record<string, string> = {
  tenant_id: 'tnt',
  key_id: 'key',
  mandate_id: 'mdt',
  decision_id: 'dec',
  verification_id: 'idv',
  request_id: 'req',
  resource_id: 'mdt',
  replaces_key_id: 'key',
  replaced_by: 'key',
};
/** Strings by member name, tried before the generic ones. */
const BY_NAME: Record<string, string[]> = {
  action: ['payments:create'],
  actions: ['payments:create'],
  resource: ['accounts/acc-1001'],
  resources: ['accounts/acc-1001'],
  currency: ['EUR'],
  contact_email: ['ops@example.com'],
  allowed_origins: ['https://shop.example.com'],
  logo_url: ['https://shop.example.com/logo.png'],
  url: ['https://shop.example.com/webhooks/mandates'],
  primary_color: ['#1a73e8'],
  locale: ['en'],
  country: ['DE'],
  subject_id: ['dashboard:alice', 'wallet:7c2f0d', 'oidc:workforce:alice'],
  admin_subject_id: ['dashboard:alice'],
  name: ['Example GmbH'],
  organization_name: ['Example GmbH'],
  reason: ['Requested by the principal'],
  kid: ['k1'],
  alg: ['ES256'],
};

export function withExamples<D>(document: D): D {
  const doc = document as Document;
  const schemas = doc.components?.schemas ?? {};
  const exampleOf = (schema: Schema | undefined, name: string, depth = 0): unknown => {
    if (!schema || depth > 12) return undefined;
    if (schema.$ref) return exampleOf(schemas[schema.$ref.split('/').pop()!], name, depth + 1);
    if (schema.examples?.length) return schema.examples[0];
    if (schema.example !== undefined) return schema.example;
    if (schema.const !== undefined) return schema.const;
    if (schema.enum?.length) return schema.enum[0];
    if (schema.default !== undefined) return schema.default;
    const branches = schema.anyOf ?? schema.oneOf;
    if (branches) {
      // The first branch that is not null (a nullable member shows its value).
      const branch = branches.find((b) => b.type !== 'null') ?? branches[0];
      return exampleOf(branch, name, depth + 1);
    }
    if (schema.allOf)
      return Object.assign({}, ...schema.allOf.map((part) => exampleOf(part, name, depth + 1) as object));
    const recurse = (sub: Schema | undefined, member: string) => exampleOf(sub, member, depth + 1);
    return exampleByType(schema, name, recurse);
  };

  for (const item of [...Object.values(doc.paths ?? {}), ...Object.values(doc.webhooks ?? {})]) {
    for (const operation of Object.values(item) as Operation[]) {
      const media = [
        ...Object.values(operation.requestBody?.content ?? {}),
        ...Object.entries(operation.responses ?? {})
          .filter(([status]) => /^2/.test(status))
          .flatMap(([, response]) => Object.values(response.content ?? {})),
      ];
      for (const m of media) if (m.example === undefined) m.example = exampleOf(m.schema, '');
    }
  }
  return document;
}

/** An example by the schema's own type, members and items through `recurse`. */
function exampleByType(
  schema: Schema,
  name: string,
  recurse: (sub: Schema | undefined, member: string) => unknown,
): unknown {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      if (schema.properties) {
        const out: Record<string, unknown> = {};
        for (const [member, sub] of Object.entries(schema.properties)) {
          const value = recurse(sub, member);
          if (value !== undefined) out[member] = value;
        }
        return out;
      }
      const values = schema.additionalProperties;
      if (values && typeof values === 'object') return { example: recurse(values, 'example') };
      return {};
    }
    case 'array': {
      const item = recurse(schema.items, name);
      return item === undefined ? [] : Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item);
    }
    case 'integer':
    case 'number':
      return numberFor(schema, name);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'string':
      return stringFor(schema, name);
    default:
      return undefined;
  }
}

function numberFor(schema: Schema, name: string): number {
  const wanted = /amount/.test(name) ? 1200 : name === 'limit' ? 20 : 1;
  const low = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 0);
  return Math.min(Math.max(wanted, low), schema.maximum ?? Number.MAX_SAFE_INTEGER);
}

function stringFor(schema: Schema, name: string): string {
  const candidates = [
    ...(schema.format === 'date-time' || /_at$|^since$|^until$|^valid_from$/.test(name) ? [INSTANT] : []),
    ...(schema.format === 'email' ? ['ops@example.com'] : []),
    ...(schema.format === 'uri' || schema.format === 'url' ? ['https://shop.example.com/'] : []),
    ...(BY_NAME[name] ?? []),
    ...(ID_PREFIX[name] ? [`${ID_PREFIX[name]}_${ID_TAIL}`] : []),
    ...(name === 'id' ? [`mdt_${ID_TAIL}`] : []),
    ...(name.endsWith('_id') ? [`${name.slice(0, 3)}_${ID_TAIL}`] : []),
    ...(schema.pattern ? [fromPattern(schema.pattern)].filter((s) => s !== undefined) : []),
    'example',
  ];
  const fits = (value: string) =>
    value.length >= (schema.minLength ?? 0) &&
    value.length <= (schema.maxLength ?? Infinity) &&
    (!schema.pattern || new RegExp(schema.pattern, 'u').test(value));
  return candidates.find(fits) ?? candidates[0]!;
}

/**
 * A string matching a simple pattern — literals, `\\d`, character classes with `{n}`/`{n,m}`/`+`,
 * or one group of alternatives `^(?:A|B)$` — or undefined for anything else.
 */
function fromPattern(pattern: string): string | undefined {
  const body = pattern.replace(/^\^/, '').replace(/\$$/, '');
  const alternatives = /^\(\?:([^()]*)\)$/.exec(body);
  if (alternatives) return alternatives[1]!.split('|')[0];
  let out = '';
  for (let i = 0; i < body.length;) {
    let chars: string[];
    if (body[i] === '[') {
      const end = body.indexOf(']', i);
      if (end < 0 || body[i + 1] === '^') return undefined;
      chars = expandClass(body.slice(i + 1, end));
      i = end + 1;
    } else if (body[i] === '\\') {
      const escaped = body[i + 1]!;
      chars = escaped === 'd' ? [...'0123456789'] : /[a-zA-Z]/.test(escaped) ? [] : [escaped];
      i += 2;
    } else if ('()|*?.{'.includes(body[i]!)) {
      return undefined;
    } else {
      chars = [body[i]!];
      i += 1;
    }
    if (chars.length === 0) return undefined;
    const quantifier = /^(?:\{(\d+)(?:,\d*)?\}|\+)/.exec(body.slice(i));
    const count = quantifier ? Number(quantifier[1] ?? 1) : 1;
    i += quantifier?.[0].length ?? 0;
    for (let n = 0; n < count; n++) out += chars[n % chars.length];
  }
  return out;
}

function expandClass(text: string): string[] {
  const chars: string[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i + 1] === '-' && i + 2 < text.length) {
      for (let c = text.charCodeAt(i); c <= text.charCodeAt(i + 2); c++) chars.push(String.fromCharCode(c));
      i += 2;
    } else if (text[i] !== '\\') chars.push(text[i]!);
  }
  return chars;
}
