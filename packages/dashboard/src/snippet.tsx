import { Button, CopyButton, Group, Text } from '@mantine/core';
import { Copy } from 'lucide-react';

/** A titled piece of code with a button that copies it. */
export function Snippet({
  title,
  code,
  copyLabel,
  testId,
  mt,
}: {
  title: string;
  code: string;
  copyLabel: string;
  testId: string;
  mt?: string;
}) {
  return (
    <>
      <Group justify="space-between" mt={mt} mb={4}>
        <Text fw={600} size="sm">
          {title}
        </Text>
        <CopyButton value={code}>
          {({ copied, copy }) => (
            <Button
              size="compact-xs"
              variant="default"
              onClick={copy}
              leftSection={<Copy size={12} aria-hidden />}
            >
              {copied ? 'Copied' : copyLabel}
            </Button>
          )}
        </CopyButton>
      </Group>
      {/* Focusable: a long call scrolls sideways, and a keyboard must reach it to scroll it. */}
      <pre className="snippet" data-testid={testId} tabIndex={0}>
        {code}
      </pre>
    </>
  );
}

/**
 * The same call as curl and as @mandate/client code, for the caller's own credentials: `path` is
 * what curl posts to, `method` the client's method (`verify`, `authzen.accessEvaluation`).
 */
export function Reproduce({
  id,
  title = 'Reproduce this call',
  path,
  method,
  body,
  testIds = { curl: 'curl', client: 'client-call' },
}: {
  id: string;
  title?: string;
  path: string;
  method: string;
  body: unknown;
  testIds?: { curl: string; client: string };
}) {
  const origin = window.location.origin;
  const json = JSON.stringify(body);
  const curl = [
    `curl -X POST ${origin}${path} \\`,
    `  -H "Authorization: Bearer $MANDATE_API_KEY" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d '${json.replace(/'/g, "'\\''")}'`,
  ].join('\n');
  const client = [
    `import { MandateClient } from '@mandate/client';`,
    ``,
    `const client = new MandateClient({ baseUrl: '${origin}', apiKey: process.env.MANDATE_API_KEY });`,
    `const answer = await client.${method}(${JSON.stringify(body, null, 2)
      .replace(/\n/g, '\n  ')
      .replace(/\n {2}\}$/, '\n}')});`,
  ].join('\n');
  return (
    <section className="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <Text size="sm" mb="xs">
        With an API key holding the <code>verify</code> scope (as <code>tenantId:secret</code> in{' '}
        <code>MANDATE_API_KEY</code>):
      </Text>
      <Snippet title="curl" code={curl} copyLabel="Copy curl" testId={testIds.curl} />
      <Snippet
        title="@mandate/client (TypeScript)"
        code={client}
        copyLabel="Copy code"
        testId={testIds.client}
        mt="sm"
      />
    </section>
  );
}
