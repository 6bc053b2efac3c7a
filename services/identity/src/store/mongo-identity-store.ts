import type { MongoQueryShape } from '@mandate/shared/data';
import { MongoOutboxSource, outboxQueryShapes } from '@mandate/shared/data';
import type { Connection, Model } from 'mongoose';
import {
  ACCESS_BASELINE_QUERY_SHAPES,
  MongoAccessBaselineStore,
  accessBaselineSchema,
  type AccessBaselineDoc,
} from '../access-baselines/mongo-access-baseline-store';
import {
  API_KEY_QUERY_SHAPES,
  MongoApiKeyStore,
  apiKeySchema,
  type ApiKeyDoc,
} from '../api-keys/mongo-api-key-store';
import type { WithOutbox } from '../common/mongo';
import {
  CREDENTIAL_EPOCH_QUERY_SHAPES,
  MongoCredentialChangeStore,
  credentialEpochSchema,
  type CredentialEpochDoc,
} from '../credential-changes/mongo-credential-change-store';
import {
  IDENTITY_VERIFICATION_QUERY_SHAPES,
  MongoIdentityVerificationStore,
  identityVerificationSchema,
  type IdentityVerificationDoc,
} from '../identity-verifications/mongo-identity-verification-store';
import {
  MongoOnboardingStore,
  ONBOARDING_QUERY_SHAPES,
  onboardingSchema,
  type OnboardingDoc,
} from '../onboarding/mongo-onboarding-store';
import {
  MongoRoleAssignmentStore,
  ROLE_ASSIGNMENT_QUERY_SHAPES,
  adminCountSchema,
  roleAssignmentSchema,
  type AdminCountDoc,
  type RoleAssignmentDoc,
} from '../role-assignments/mongo-role-assignment-store';
import {
  MongoTenantStore,
  TENANT_QUERY_SHAPES,
  tenantSchema,
  type TenantDoc,
} from '../tenants/mongo-tenant-store';
import {
  MongoWidgetConfigStore,
  WIDGET_CONFIG_QUERY_SHAPES,
  widgetSchema,
  type WidgetDoc,
} from '../widget-config/mongo-widget-config-store';
import type { IdentityStore } from './identity-store';

/** The schemas by collection, for the index-coverage test. */
export const IDENTITY_SCHEMAS = {
  tenants: tenantSchema,
  api_keys: apiKeySchema,
  role_assignments: roleAssignmentSchema,
  onboarding_requests: onboardingSchema,
  widget_configs: widgetSchema,
  identity_verifications: identityVerificationSchema,
  access_baselines: accessBaselineSchema,
} as const;

/** Collections without an outbox (they record no audited change), for the index-coverage test. */
export const IDENTITY_GUARD_SCHEMAS = {
  tenant_admin_counts: adminCountSchema,
  credential_epoch: credentialEpochSchema,
} as const;

/** Every query the aggregates' Mongo stores and the outbox below run, for the index-coverage test. */
export const IDENTITY_QUERY_SHAPES: MongoQueryShape[] = [
  ...TENANT_QUERY_SHAPES,
  ...API_KEY_QUERY_SHAPES,
  ...ROLE_ASSIGNMENT_QUERY_SHAPES,
  ...ONBOARDING_QUERY_SHAPES,
  ...WIDGET_CONFIG_QUERY_SHAPES,
  ...IDENTITY_VERIFICATION_QUERY_SHAPES,
  ...ACCESS_BASELINE_QUERY_SHAPES,
  ...CREDENTIAL_EPOCH_QUERY_SHAPES,
  ...Object.keys(IDENTITY_SCHEMAS).flatMap(outboxQueryShapes),
];

/** The aggregates' Mongo stores on one connection, and the outbox across their collections. */
export class MongoIdentityStore extends MongoOutboxSource implements IdentityStore {
  readonly tenants: MongoTenantStore;
  readonly apiKeys: MongoApiKeyStore;
  readonly roleAssignments: MongoRoleAssignmentStore;
  readonly onboarding: MongoOnboardingStore;
  readonly widgetConfigs: MongoWidgetConfigStore;
  readonly identityVerifications: MongoIdentityVerificationStore;
  readonly accessBaselines: MongoAccessBaselineStore;
  readonly credentialChanges: MongoCredentialChangeStore;

  private constructor(
    connection: Connection,
    adminCounts: Model<AdminCountDoc>,
    epoch: Model<CredentialEpochDoc>,
    models: {
      tenants: Model<TenantDoc>;
      keys: Model<ApiKeyDoc>;
      assignments: Model<RoleAssignmentDoc>;
      onboarding: Model<OnboardingDoc>;
      widgets: Model<WidgetDoc>;
      verifications: Model<IdentityVerificationDoc>;
      baselines: Model<AccessBaselineDoc>;
    },
  ) {
    // Every collection that records audited changes, in the order the relay reads them.
    super(connection, Object.values(models) as unknown as Model<WithOutbox>[]);
    this.tenants = new MongoTenantStore(models.tenants);
    this.apiKeys = new MongoApiKeyStore(models.keys);
    this.roleAssignments = new MongoRoleAssignmentStore(models.assignments, adminCounts);
    this.onboarding = new MongoOnboardingStore(models.onboarding);
    this.widgetConfigs = new MongoWidgetConfigStore(models.widgets);
    this.identityVerifications = new MongoIdentityVerificationStore(models.verifications);
    this.accessBaselines = new MongoAccessBaselineStore(models.baselines);
    this.credentialChanges = new MongoCredentialChangeStore(epoch);
  }

  /** Builds the models and waits for every index, so uniqueness holds before the first request. */
  static async create(connection: Connection): Promise<MongoIdentityStore> {
    const models = {
      tenants: connection.model<TenantDoc>('Tenant', tenantSchema),
      keys: connection.model<ApiKeyDoc>('ApiKey', apiKeySchema),
      assignments: connection.model<RoleAssignmentDoc>('RoleAssignment', roleAssignmentSchema),
      onboarding: connection.model<OnboardingDoc>('OnboardingRequest', onboardingSchema),
      widgets: connection.model<WidgetDoc>('WidgetConfig', widgetSchema),
      verifications: connection.model<IdentityVerificationDoc>(
        'IdentityVerification',
        identityVerificationSchema,
      ),
      baselines: connection.model<AccessBaselineDoc>('AccessBaseline', accessBaselineSchema),
    };
    const adminCounts = connection.model<AdminCountDoc>('TenantAdminCount', adminCountSchema);
    const epoch = connection.model<CredentialEpochDoc>('CredentialEpoch', credentialEpochSchema);
    await Promise.all([...Object.values(models), adminCounts].map((model) => model.createIndexes()));
    return new MongoIdentityStore(connection, adminCounts, epoch, models);
  }
}
