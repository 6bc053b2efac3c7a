import { useEffect, useState, type Dispatch, type FormEvent, type SetStateAction } from 'react';
import { useMutation, useQuery, useQueryClient, type UseMutationResult } from '@tanstack/react-query';
import { Button, Group, Textarea } from '@mantine/core';
import type { WidgetConfig } from '@mandate/client';
import { apiOf } from '../api';
import type { Area } from '../areas';
import { useAreaAuth } from '../auth';
import { ErrorMessage, Loading, notifyDone, PageHeader, TextField, fieldsOf, formatTime, Fact } from '../ui';

interface Draft {
  origins: string;
  color: string;
  logo: string;
  locale: string;
}

const toDraft = (c: WidgetConfig): Draft => ({
  origins: c.allowed_origins.join('\n'),
  color: c.theme.primary_color ?? '',
  logo: c.theme.logo_url ?? '',
  locale: c.locale ?? '',
});

/** The body PUT expects: empty fields are left out (the API's defaults), origins one a line. */
const toBody = (d: Draft) => ({
  allowed_origins: d.origins
    .split(/\s+/)
    .map((o) => o.trim())
    .filter(Boolean),
  theme: {
    ...(d.color.trim() ? { primary_color: d.color.trim() } : {}),
    ...(d.logo.trim() ? { logo_url: d.logo.trim() } : {}),
  },
  locale: d.locale.trim() || null,
});

export function WidgetPage({ area }: { area: Area }) {
  const { session, tenantId, canWrite } = useAreaAuth(area);
  const queryClient = useQueryClient();
  const config = useQuery({
    queryKey: ['widget-config', tenantId],
    queryFn: () => apiOf(session).widgetConfig.get(tenantId),
  });
  const [draft, setDraft] = useState<Draft | null>(null);
  useEffect(() => {
    if (config.data) setDraft(toDraft(config.data));
  }, [config.data]);
  const save = useMutation({
    mutationFn: (d: Draft) => apiOf(session).widgetConfig.put(tenantId, toBody(d)),
    onSuccess: (saved) => {
      queryClient.setQueryData(['widget-config', tenantId], saved);
      notifyDone('Widget configuration saved.', 'widget-saved');
    },
  });
  return (
    <>
      <PageHeader title="Widget configuration" />
      {config.isPending ? <Loading /> : null}
      <ErrorMessage error={config.error} />
      {config.data && draft ? (
        <div className="split">
          {canWrite ? (
            <SettingsForm draft={draft} setDraft={setDraft} saved={config.data} save={save} />
          ) : (
            <section className="card" aria-labelledby="widget-current-title">
              <h2 id="widget-current-title">Current settings</h2>
              <dl className="facts">
                <Fact term="Allowed origins" testId="widget-origins">
                  {config.data.allowed_origins.length ? config.data.allowed_origins.join(', ') : 'none'}
                </Fact>
                <Fact term="Primary colour">{config.data.theme.primary_color ?? 'default'}</Fact>
                <Fact term="Logo URL">{config.data.theme.logo_url ?? 'none'}</Fact>
                <Fact term="Locale">{config.data.locale ?? 'default (en)'}</Fact>
                <Fact term="Last saved">{formatTime(config.data.updated_at)}</Fact>
              </dl>
              <p className="muted">Changes need the tenant:write permission.</p>
            </section>
          )}
          <WidgetPreview draft={draft} />
        </div>
      ) : null}
    </>
  );
}

/** The settings as a form: saved with PUT, or discarded back to the saved ones. */
function SettingsForm({
  draft,
  setDraft,
  saved,
  save,
}: {
  draft: Draft;
  setDraft: Dispatch<SetStateAction<Draft | null>>;
  saved: WidgetConfig;
  save: UseMutationResult<WidgetConfig, Error, Draft>;
}) {
  const field = fieldsOf(draft, (k, value) => setDraft((d) => (d ? { ...d, [k]: value } : d)));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate(draft);
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="widget-form-title">
      <h2 id="widget-form-title">Settings</h2>
      <Textarea
        id="widget-origins"
        label="Allowed origins (https, one a line)"
        rows={4}
        mb="sm"
        value={draft.origins}
        onChange={(e) => field('origins').onChange(e.currentTarget.value)}
        placeholder="https://shop.example.com"
      />
      <div className="row">
        <TextField id="widget-color" label="Primary colour" {...field('color')} placeholder="#0b4f9c" />
        <TextField id="widget-locale" label="Locale" {...field('locale')} placeholder="en" />
      </div>
      <div className="row">
        <TextField
          id="widget-logo"
          label="Logo URL (https)"
          className="wide"
          {...field('logo')}
          placeholder="https://cdn.example.com/logo.svg"
        />
      </div>
      <Group gap="sm" mb="sm">
        <Button type="submit" loading={save.isPending}>
          Save widget configuration
        </Button>
        <Button variant="default" disabled={save.isPending} onClick={() => setDraft(toDraft(saved))}>
          Discard changes
        </Button>
      </Group>
      <ErrorMessage error={save.error} />
      <p className="muted">Last saved: {formatTime(saved.updated_at)}</p>
    </form>
  );
}

const COLOR = /^#[0-9a-fA-F]{6}$/;
const TEXT: Record<string, { title: string; body: string; button: string }> = {
  en: {
    title: 'Confirm your mandate',
    body: 'Verify your identity with your wallet to continue.',
    button: 'Verify with wallet',
  },
  de: {
    title: 'Mandat bestätigen',
    body: 'Bestätigen Sie Ihre Identität mit Ihrer Wallet, um fortzufahren.',
    button: 'Mit Wallet bestätigen',
  },
  fr: {
    title: 'Confirmez votre mandat',
    body: 'Vérifiez votre identité avec votre portefeuille pour continuer.',
    button: 'Vérifier avec le portefeuille',
  },
  it: {
    title: 'Conferma il tuo mandato',
    body: 'Verifica la tua identità con il tuo wallet per continuare.',
    button: 'Verifica con il wallet',
  },
};

/** Black or white, whichever reads better on the colour (WCAG relative luminance). */
export function textOn(hex: string): '#000000' | '#ffffff' {
  const lin = (i: number) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const l = 0.2126 * lin(1) + 0.7152 * lin(3) + 0.0722 * lin(5);
  return (l + 0.05) / 0.05 > 1.05 / (l + 0.05) ? '#000000' : '#ffffff';
}

/**
 * A small rendered mock of the widget with the (unsaved) theme and locale. The logo is named,
 * not loaded: the dashboard's Content-Security-Policy loads images from itself only.
 */
export function WidgetPreview({ draft }: { draft: Draft }) {
  const color = COLOR.test(draft.color.trim()) ? draft.color.trim() : '#0b4f9c';
  const locale = draft.locale.trim() || 'en';
  const text = TEXT[locale.toLowerCase().split('-')[0]!] ?? TEXT.en!;
  let logoHost = '';
  try {
    logoHost = draft.logo.trim() ? new URL(draft.logo.trim()).host : '';
  } catch {
    logoHost = '';
  }
  return (
    <section className="card" aria-labelledby="widget-preview-title">
      <h2 id="widget-preview-title">Live preview</h2>
      <div className="widget-mock" lang={locale} data-testid="widget-preview">
        <div className="widget-mock-head" style={{ background: color, color: textOn(color) }}>
          <span className="widget-mock-logo" aria-hidden="true">
            {logoHost ? 'Logo' : '◆'}
          </span>
          <strong>{text.title}</strong>
        </div>
        <p>{text.body}</p>
        <span
          className="widget-mock-button"
          style={{ background: color, color: textOn(color) }}
          data-testid="widget-preview-button"
        >
          {text.button}
        </span>
      </div>
      <p className="muted">
        Colour {color}, locale {locale}
        {logoHost ? `, logo from ${logoHost}` : ''}.
      </p>
    </section>
  );
}
