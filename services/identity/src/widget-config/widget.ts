/** docs/API.md, "Tenants, role assignments, onboarding, widget": how a tenant's embeddable widget may be used and how it looks. */
export interface WidgetConfig {
  allowed_origins: string[];
  theme: { primary_color?: string; logo_url?: string };
  locale: string | null;
  /** null until the tenant first saves a configuration. */
  updated_at: string | null;
}

export const DEFAULT_WIDGET_CONFIG: WidgetConfig = {
  allowed_origins: [],
  theme: {},
  locale: null,
  updated_at: null,
};
