import { callerFor } from '@mandate/shared/testing';
import { identityStoreAdapters, identityForSuite } from './helpers';

describe.each(identityStoreAdapters())('identity: widget config (component, $name store)', (adapter) => {
  const svc = identityForSuite({}, adapter);

  async function tenant() {
    const t = await svc.createTenant();
    return { ...t, caller: callerFor(t.tenantId), path: `/v1/tenants/${t.tenantId}/widget-config` };
  }

  const valid = {
    allowed_origins: ['https://shop.example.com', 'https://app.example.com:8443'],
    theme: { primary_color: '#1a2b3c', logo_url: 'https://cdn.example.com/logo.svg' },
    locale: 'de-CH',
  };

  it('when nothing was saved, then GET answers the defaults', async () => {
    const { caller, path } = await tenant();
    expect(await svc.call('GET', path, { caller })).toMatchObject({
      status: 200,
      body: { allowed_origins: [], theme: {}, locale: null, updated_at: null },
    });
  });

  it('when a configuration is put, then it is answered, read back and WIDGET_CONFIG_UPDATED is emitted', async () => {
    const { caller, path, tenantId } = await tenant();
    const put = await svc.call('PUT', path, { caller, body: valid });
    expect(put).toMatchObject({ status: 200, body: { ...valid, updated_at: expect.any(String) } });
    expect((await svc.call('GET', path, { caller })).body).toEqual(put.body);
    expect(svc.publisher.forTenant(tenantId).at(-1)).toMatchObject({
      type: 'WIDGET_CONFIG_UPDATED',
      resource: { type: 'widget_config', id: tenantId },
      data: { allowed_origins: valid.allowed_origins },
    });
    // PUT replaces: omitted theme and locale fall back to their defaults.
    const replaced = await svc.call('PUT', path, { caller, body: { allowed_origins: [] } });
    expect(replaced.body).toMatchObject({ allowed_origins: [], theme: {}, locale: null });
  });

  it.each([
    ['an http origin', 'http://shop.example.com'],
    ['a path', 'https://shop.example.com/checkout'],
    ['a trailing slash', 'https://shop.example.com/'],
    ['a wildcard', 'https://*.example.com'],
    ['a query', 'https://shop.example.com?x=1'],
    ['credentials', 'https://user:pw@shop.example.com'],
    ['the default port spelled out', 'https://shop.example.com:443'],
    ['no scheme', 'shop.example.com'],
    ['a bare wildcard', '*'],
    ['no slashes', 'https:shop.example.com'],
    ['a user name', 'https://user@shop.example.com'],
    ['a host that is no host name', 'https://alert(1)'],
  ])('when an origin has %s, then 400 naming allowed_origins', async (_label, origin) => {
    const { caller, path } = await tenant();
    const res = await svc.call('PUT', path, { caller, body: { allowed_origins: [origin] } });
    expect(res).toMatchObject({
      status: 400,
      body: {
        message:
          'allowed_origins.0: must be an https origin such as https://shop.example.com (no path, no wildcard)',
      },
    });
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'a bad colour',
      { theme: { primary_color: 'red' } },
      'theme.primary_color: must be a hex colour such as #1a2b3c',
    ],
    [
      'an http logo',
      { theme: { logo_url: 'http://x.example.com/l.png' } },
      'theme.logo_url: must be an https URL without credentials',
    ],
    ...[
      ['a logo without slashes', 'https:alert(1)'],
      ['a javascript logo', 'javascript:alert(1)'],
      ['a logo with credentials', 'https://user:pw@cdn.example.com/l.png'],
      ['a logo with a user name', 'https://user@cdn.example.com/l.png'],
      ['a logo with backslashes', 'https:\\\\cdn.example.com\\l.png'],
      ['a logo with a leading space', ' https://cdn.example.com/l.png'],
      ['a logo with a tab inside', 'https://cdn.exa\tmple.com/l.png'],
      ['a logo host that is no host name', 'https://alert(1)/'],
    ].map(([label, logo_url]): [string, Record<string, unknown>, string] => [
      label!,
      { theme: { logo_url } },
      'theme.logo_url: must be an https URL without credentials',
    ]),
    ['an unknown theme field', { theme: { font: 'Comic Sans' } }, 'theme.font is not allowed'],
    ['a bad locale', { locale: 'german' }, 'locale: must be a BCP 47 tag such as en or de-CH'],
    ['no origins', { allowed_origins: undefined }, 'allowed_origins is required'],
  ])('when the body has %s, then 400 naming the field', async (_label, extra, message) => {
    const { caller, path } = await tenant();
    const res = await svc.call('PUT', path, { caller, body: { allowed_origins: [], ...extra } });
    expect(res).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST', message } });
  });

  it('when URLs are put, then they are stored normalised: the logo as its WHATWG href, origins as browsers send them', async () => {
    const { caller, path } = await tenant();
    const put = await svc.call('PUT', path, {
      caller,
      body: {
        allowed_origins: [
          'https://Shop.Example.COM',
          'https://b\u00fccher.example',
          'https://shop.example.com',
        ],
        theme: { logo_url: 'https://CDN.example.com/l.png"onerror="alert(1)' },
      },
    });
    expect(put).toMatchObject({ status: 200 });
    const stored = (await svc.call('GET', path, { caller })).body;
    expect(stored.allowed_origins).toEqual(['https://shop.example.com', 'https://xn--bcher-kva.example']);
    expect(stored.theme.logo_url).toBe('https://cdn.example.com/l.png%22onerror=%22alert(1)');
  });

  it("when another tenant's configuration is read or written, then 404", async () => {
    const a = await tenant();
    const b = await tenant();
    expect(await svc.call('GET', b.path, { caller: a.caller })).toMatchObject({ status: 404 });
    expect(await svc.call('PUT', b.path, { caller: a.caller, body: valid })).toMatchObject({ status: 404 });
    expect((await svc.call('GET', b.path, { caller: b.caller })).body.allowed_origins).toEqual([]);
  });

  // The gateway enforces the contract's permissions (tenant:read reads, tenant:write changes: the
  // route-security suite); the service itself answers such a caller.
  it('when a JWT subject holding tenant:read reads the configuration, then 200 with what was saved', async () => {
    const { tenantId, path, caller } = await tenant();
    await svc.call('PUT', path, { caller, body: valid });
    const viewer = callerFor(tenantId, {
      actor: { type: 'user', subject_id: 'dashboard:viewer' },
      permissions: ['mandates:read', 'tenant:read'],
    });
    expect(await svc.call('GET', path, { caller: viewer })).toMatchObject({
      status: 200,
      body: { allowed_origins: valid.allowed_origins },
    });
  });
});
